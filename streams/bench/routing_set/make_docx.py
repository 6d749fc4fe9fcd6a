"""Write the .docx documents of the routing set from the text kept in this script.

Run it once after editing a document below (it needs python-docx):

    python streams/bench/routing_set/make_docx.py

All text here is invented: the companies, people, agencies and numbers are made up.
Each document is a list of blocks: ("title" | "h1" | "h2" | "p" | "bullet", text), ("table", rows),
or ("page",) for a page break.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from docx import Document

DOCS = Path(__file__).resolve().parent / "docs"
CREATED = dt.datetime(2031, 1, 1, 12, 0, 0)

LETTER = [
    ("title", "Ostrander Mutual Holdings, Inc."),
    ("p", "2030 Annual Report"),
    ("h1", "To Our Shareholders"),
    (
        "p",
        "Ostrander's book value per share increased 10.2% in 2030, to $147.35. Over the past ten years it has grown at a compound rate of 11.4%, while the S&P 500, with dividends reinvested, returned 9.8% a year.",
    ),
    (
        "table",
        [
            ["", "2028", "2029", "2030"],
            ["Book value per share", "$121.90", "$133.71", "$147.35"],
            ["Change in book value per share", "9.3%", "9.7%", "10.2%"],
            ["S&P 500 total return", "(4.8%)", "16.9%", "12.3%"],
        ],
    ),
    (
        "p",
        "We think of ourselves as the owners of a group of businesses rather than as managers of a stock price. Our property and casualty companies earned an underwriting profit for the sixth straight year, with a combined ratio of 94.6%. Our title insurance business suffered as home sales slowed, and we reduced its staff by attrition rather than by layoffs, because we expect the market to return and we want experienced people when it does.",
    ),
    (
        "p",
        "We made one sizeable purchase: the remaining 40% of Clearwater Marine Underwriters that we did not already own. We paid a full price, and we are comfortable with it, because Clearwater's leaders have shown for fifteen years that they will turn away business rather than underprice it.",
    ),
    (
        "p",
        "We repurchased no shares this year. Our stock traded at or above our estimate of intrinsic value for most of 2030, and buying it at those prices would have transferred value from continuing shareholders to departing ones.",
    ),
    ("p", "Our annual meeting will be held in Harwick on May 15, 2031. We hope to see many of you there."),
    ("p", "Leonard A. Fairbanks"),
    ("p", "Chairman and Chief Executive Officer"),
    ("p", "February 24, 2031"),
]

TRANSCRIPT = [
    ("title", "Kinloch Brewing Company (KBRW) Q4 2030 Earnings Call"),
    ("p", "February 20, 2031, 9:00 a.m. ET"),
    ("h2", "Company Participants"),
    ("p", "Rosemary Achterberg -- Chief Executive Officer"),
    ("p", "Simon Oyelowo -- Chief Financial Officer"),
    ("h2", "Conference Call Participants"),
    ("p", "Clara Jennings -- Marlow Street Partners"),
    ("p", "Viktor Sandoval -- Ashmead Research"),
    ("h2", "Presentation"),
    (
        "p",
        "Operator: Good morning and welcome to the Kinloch Brewing fourth quarter 2030 earnings conference call. Today's call is being recorded. I would now like to turn the call over to Rosemary Achterberg, Chief Executive Officer.",
    ),
    ("p", "Rosemary Achterberg -- Chief Executive Officer"),
    (
        "p",
        "Thank you, and good morning. Thanks for joining the call. Net sales in the quarter rose 6% to $418 million as our craft lager and hard seltzer brands gained share in the Midwest. Volume was up 2% and price and mix added four points.",
    ),
    ("p", "Simon Oyelowo -- Chief Financial Officer"),
    (
        "p",
        "Thanks, Rosemary. Gross margin was 41.2%, up 80 basis points, as aluminium costs eased. Adjusted EPS was $0.63. For 2031 we expect net sales growth of 3% to 5% and adjusted EPS of $2.55 to $2.70.",
    ),
    ("h2", "Question-and-Answer Session"),
    ("p", "Operator: Our first question comes from Clara Jennings with Marlow Street Partners. Please go ahead."),
    ("p", "Clara Jennings -- Marlow Street Partners"),
    ("p", "Good morning. Rosemary, are you seeing any trade-down from craft into value brands?"),
    ("p", "Rosemary Achterberg -- Chief Executive Officer"),
    ("p", "A little in convenience stores, Clara, but our core brands are holding price."),
    ("p", "Operator: Our next question comes from Viktor Sandoval with Ashmead Research."),
    ("p", "Viktor Sandoval -- Ashmead Research"),
    ("p", "Simon, what's assumed for aluminium in the guidance?"),
    ("p", "Simon Oyelowo -- Chief Financial Officer"),
    ("p", "Roughly flat with the fourth quarter, Viktor, and about 70% is hedged."),
    (
        "p",
        "Operator: This concludes today's question-and-answer session. Thank you for joining the call. You may now disconnect.",
    ),
]

RELEASE = [
    ("title", "Sabre Coast Pharmaceuticals Reports Third Quarter 2031 Financial Results"),
    ("p", "Net revenue of $522 million, up 18% year over year; non-GAAP EPS of $1.06"),
    (
        "p",
        "RALEIGH, N.C., Nov. 5, 2031 -- Sabre Coast Pharmaceuticals, Inc. (NASDAQ: SBCP) today reported financial results for the third quarter ended September 30, 2031.",
    ),
    ("h2", "Third Quarter Highlights"),
    ("bullet", "Total net revenue of $522.4 million, an increase of 18% compared with the third quarter of 2030"),
    ("bullet", "GAAP net income of $88.9 million, or $0.84 per diluted share"),
    ("bullet", "Non-GAAP net income of $112.3 million, or $1.06 per diluted share, up 22%"),
    ("bullet", "Cash and investments of $1.31 billion at quarter end"),
    (
        "p",
        '"Strong demand for Velumab in its second year on the market drove another quarter of double-digit growth," said Ingrid Halvorsen, Chief Executive Officer.',
    ),
    ("h2", "2031 Guidance"),
    (
        "p",
        "The company raised its full-year 2031 net revenue guidance to $2.02 billion to $2.06 billion from $1.95 billion to $2.00 billion.",
    ),
    ("h2", "Condensed Consolidated Statements of Operations (unaudited, in millions)"),
    (
        "table",
        [
            ["", "Q3 2031", "Q3 2030"],
            ["Net revenue", "522.4", "442.7"],
            ["Cost of sales", "71.8", "63.0"],
            ["Research and development", "148.2", "131.5"],
            ["Selling, general and administrative", "189.6", "170.2"],
            ["Net income", "88.9", "59.4"],
            ["Diluted EPS (GAAP)", "0.84", "0.56"],
        ],
    ),
    ("h2", "Forward-Looking Statements"),
    (
        "p",
        "This press release contains forward-looking statements regarding guidance and product demand, which are subject to risks and uncertainties.",
    ),
    ("h2", "About Sabre Coast Pharmaceuticals"),
    ("p", "Sabre Coast develops biologic medicines for immune disorders."),
    ("p", "Investor Contact: Marcus Ellery, ir@sabrecoast.example"),
]

SLIDES = [
    ("title", "Pemberton Rail & Freight"),
    ("p", "Q1 2031 Earnings Presentation"),
    ("p", "April 23, 2031"),
    ("page",),
    ("h1", "Safe Harbor"),
    ("bullet", "Forward-looking statements subject to risks and uncertainties"),
    ("bullet", "Non-GAAP reconciliations in appendix"),
    ("page",),
    ("h1", "Agenda"),
    ("bullet", "Q1 Highlights"),
    ("bullet", "Operating Metrics"),
    ("bullet", "Financial Results"),
    ("bullet", "2031 Outlook"),
    ("bullet", "Q&A"),
    ("page",),
    ("h1", "Q1 2031 Key Highlights"),
    ("bullet", "Revenue $2.21B, +5%"),
    ("bullet", "Operating ratio 61.9%, record Q1"),
    ("bullet", "Carloads +3%; intermodal +7%"),
    ("bullet", "Train speed +4% Y/Y"),
    ("page",),
    ("h1", "Operating Metrics"),
    (
        "table",
        [
            ["Metric", "Q1 2030", "Q1 2031"],
            ["Terminal dwell (hrs)", "24.1", "22.6"],
            ["Train speed (mph)", "19.8", "20.6"],
            ["Car velocity (miles/day)", "201", "214"],
        ],
    ),
    ("page",),
    ("h1", "Financial Results"),
    (
        "table",
        [
            ["($M, except EPS)", "Q1 2030", "Q1 2031"],
            ["Operating revenue", "2,105", "2,210"],
            ["Operating income", "780", "842"],
            ["Diluted EPS", "$2.41", "$2.67"],
            ["Free cash flow", "512", "566"],
        ],
    ),
    ("bullet", "Fuel surcharge revenue -$38M Y/Y"),
    ("bullet", "Productivity savings $61M"),
    ("page",),
    ("h1", "Network Investment"),
    ("bullet", "Siding extensions: 14 completed, 9 under way"),
    ("bullet", "Positive train control upgrades on 1,200 route miles"),
    ("bullet", "New intermodal terminal at Dunmore opens Q3"),
    ("page",),
    ("h1", "2031 Outlook"),
    ("bullet", "Volume growth low single digits"),
    ("bullet", "Operating ratio improvement ~100 bp"),
    ("bullet", "Capex ~$2.3B"),
    ("page",),
    ("h1", "Q&A"),
]

PRESS = [
    ("p", "FOR IMMEDIATE RELEASE"),
    ("title", "Wrenfield Analytics Acquires Pallas Data Labs to Expand Supply Chain Forecasting"),
    (
        "p",
        "CHICAGO, Ill., June 2, 2031 /PRNewswire/ -- Wrenfield Analytics, a provider of demand forecasting software for retailers, today announced that it has acquired Pallas Data Labs, a Toronto-based startup whose machine learning models predict supplier delays up to six weeks in advance.",
    ),
    (
        "p",
        "The combined platform will let merchandise planners see both likely customer demand and likely supply disruptions on a single screen. Pallas's 38 employees, including its founders, will join Wrenfield's product organization. Terms of the transaction were not disclosed.",
    ),
    (
        "p",
        '"Retailers told us the forecast is only half the story if the shipment never arrives," said Harriet Lindqvist, Chief Executive Officer of Wrenfield Analytics. "Pallas has built the best early-warning system for suppliers we have seen."',
    ),
    (
        "p",
        '"Joining Wrenfield puts our models in front of hundreds of planners on day one," said Arjun Mehra, co-founder and CEO of Pallas Data Labs.',
    ),
    (
        "p",
        "Existing Pallas customers will continue to be supported, and integration into the Wrenfield platform is expected by early 2032.",
    ),
    ("h2", "About Wrenfield Analytics"),
    (
        "p",
        "Wrenfield Analytics helps more than 400 retailers and consumer brands plan inventory. The company is headquartered in Chicago.",
    ),
    ("h2", "About Pallas Data Labs"),
    ("p", "Founded in 2027, Pallas Data Labs builds risk models for global supply chains."),
    ("p", "Media Contact: Noelle Grant, press@wrenfield.example, +1 312 555 0175"),
    ("p", "###"),
]

SOO = [
    ("title", "STATEMENT OF OBJECTIVES (SOO)"),
    ("p", "Modernization of the Benefits Case Management System"),
    ("p", "Department of Veterans Family Services, Office of Information Technology"),
    ("p", "Attachment 2 to Solicitation No. 36C10X31R0042"),
    ("h2", "1. Purpose"),
    (
        "p",
        "This Statement of Objectives describes the results the government seeks from the modernization of its legacy Benefits Case Management System (BCMS). Offerors shall use this SOO to prepare a Performance Work Statement (PWS), which will be incorporated into the resulting contract.",
    ),
    ("h2", "2. Background"),
    (
        "p",
        "BCMS was developed in 2009 and processes roughly 480,000 benefit claims a year. It runs on unsupported application servers, requires manual data entry for most paper claims, and cannot expose data to the public claim-status portal.",
    ),
    ("h2", "3. Objectives"),
    ("bullet", "Reduce average claim processing time from 41 days to 20 days or fewer."),
    ("bullet", "Migrate all case data to a government-approved cloud environment with no loss of records."),
    ("bullet", "Provide application programming interfaces so claimants can see claim status in real time."),
    ("bullet", "Achieve accessibility conformance with Section 508 for all user interfaces."),
    ("bullet", "Deliver working software at least every four weeks using agile methods."),
    ("h2", "4. Constraints"),
    (
        "p",
        "The contractor shall maintain continuity of operations of the legacy system until the government accepts the replacement. Personnel with access to claimant data must hold a favorably adjudicated background investigation.",
    ),
    ("h2", "5. Period of Performance and Contract Type"),
    (
        "table",
        [
            ["Period", "Duration", "Contract type"],
            ["Base period", "12 months", "Firm-fixed-price per agile release"],
            ["Option periods 1-3", "12 months each", "Firm-fixed-price"],
            ["Transition-out", "Up to 6 months", "Time-and-materials"],
        ],
    ),
    (
        "p",
        "NAICS code 541512, Computer Systems Design Services. This acquisition is set aside for service-disabled veteran-owned small businesses.",
    ),
]

GARDEN_MINUTES = [
    ("title", "Hollins Green Garden Club"),
    ("p", "Minutes of the Monthly Meeting, Tuesday 8 April 2031, 7:30 p.m., St Barnabas Church Hall"),
    (
        "p",
        "Present: 23 members. Chair: Margaret Pell. Minutes: Ruth Edevane. Apologies: Tom and Alice Hendry, Colin Fuller.",
    ),
    ("h2", "1. Minutes of the previous meeting"),
    (
        "p",
        "The minutes of the March meeting were approved without amendment (proposed by Dennis Ware, seconded by June Oakes).",
    ),
    ("h2", "2. Treasurer's report"),
    (
        "p",
        "The treasurer, Rajesh Banerjee, reported a balance of 1,412.60 pounds. The plant sale raised 386 pounds and subscriptions are almost all in. Two members still owe for the coach trip.",
    ),
    ("h2", "3. Talk: Growing dahlias from tubers"),
    (
        "p",
        "Our speaker, Philippa Gaunt of Lowfield Nurseries, joined by video call because of a train strike. Despite the call dropping twice, she gave a lively talk on starting tubers in pots and on earwig control. The Q&A afterwards ran for twenty minutes; most questions were about slugs.",
    ),
    ("h2", "4. Summer show"),
    (
        "p",
        "The summer show will be held on Saturday 12 July. Classes will be as last year, with a new class for the best hanging basket. Entry forms are available from June Oakes.",
    ),
    ("h2", "5. Any other business"),
    (
        "p",
        "Dennis Ware reminded members that the allotment water troughs will be switched on from 15 April. The committee will issue a call for volunteers to help at the church fete in May.",
    ),
    (
        "table",
        [
            ["Action", "Who", "By"],
            ["Book the hall for the July show", "Margaret Pell", "30 April"],
            ["Chase outstanding coach payments", "Rajesh Banerjee", "Next meeting"],
            ["Print show schedules", "June Oakes", "1 June"],
        ],
    ),
    ("p", "The meeting closed at 9:15 p.m. Next meeting: Tuesday 13 May 2031."),
]

HR_FAQ = [
    ("title", "Employee Handbook: Remote Work Policy - Frequently Asked Questions"),
    ("p", "Owner: People Team | Last reviewed: 3 February 2031 | Applies to: all employees of Tamarind Studios Ltd"),
    ("h2", "Who can work remotely?"),
    (
        "p",
        "Any employee whose role does not require them to be on site may work remotely for up to three days a week, with the agreement of their manager. Roles in the studio workshop and reception are on site by nature.",
    ),
    ("h2", "Do I need to fill in a form?"),
    (
        "p",
        "Yes. Complete the Flexible Working Request in the HR portal. Your manager will respond within 14 days. If the request is declined, you will receive the reasons in writing and may appeal to the Head of People.",
    ),
    ("h2", "Will the company pay for my home office?"),
    (
        "p",
        "Employees approved for remote work receive a one-off equipment allowance of 400 pounds and a monthly contribution of 25 pounds towards internet costs, paid through payroll.",
    ),
    ("h2", "What hours am I expected to work?"),
    (
        "p",
        "Core hours are 10:00 to 15:00. Outside core hours you may arrange your day flexibly, provided you work your contracted hours and attend scheduled team meetings.",
    ),
    ("h2", "Can I work from another country?"),
    (
        "p",
        "Working abroad for more than 10 working days a year needs approval from the People Team in advance, because of tax and insurance rules.",
    ),
    (
        "table",
        [
            ["Situation", "Who approves", "Lead time"],
            ["Up to 3 remote days a week", "Line manager", "14 days"],
            ["Fully remote", "Head of department and People Team", "1 month"],
            ["Working abroad over 10 days", "People Team", "1 month"],
        ],
    ),
    ("h2", "Who do I ask if my question is not answered here?"),
    ("p", "Email people@tamarindstudios.example or speak to your HR business partner."),
]

FILES = {
    "file_014.docx": GARDEN_MINUTES,
    "file_015.docx": PRESS,
    "file_018.docx": LETTER,
    "file_021.docx": TRANSCRIPT,
    "file_026.docx": HR_FAQ,
    "file_030.docx": SLIDES,
    "file_040.docx": RELEASE,
    "file_042.docx": SOO,
}


def write(name: str, blocks: list[tuple]) -> Path:
    doc = Document()
    doc.core_properties.created = CREATED
    doc.core_properties.modified = CREATED
    doc.core_properties.author = "routing set"
    for block in blocks:
        kind = block[0]
        if kind == "title":
            doc.add_heading(block[1], level=0)
        elif kind == "h1":
            doc.add_heading(block[1], level=1)
        elif kind == "h2":
            doc.add_heading(block[1], level=2)
        elif kind == "p":
            doc.add_paragraph(block[1])
        elif kind == "bullet":
            doc.add_paragraph(block[1], style="List Bullet")
        elif kind == "table":
            rows = block[1]
            table = doc.add_table(rows=len(rows), cols=len(rows[0]))
            table.style = "Table Grid"
            for r, row in enumerate(rows):
                for c, cell in enumerate(row):
                    table.cell(r, c).text = cell
        elif kind == "page":
            doc.add_page_break()
        else:
            raise ValueError(f"{name}: unknown block {kind!r}")
    path = DOCS / name
    doc.save(str(path))
    return path


def main() -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    for name, blocks in FILES.items():
        print(write(name, blocks).relative_to(DOCS.parent))


if __name__ == "__main__":
    main()
