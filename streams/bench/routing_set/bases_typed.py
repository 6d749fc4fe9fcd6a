"""Invented base documents of the six typed kinds, in Markdown with pipe tables; pages split on `\f`.

All companies, people, agencies and figures are made up. `make.py` renders each in several shapes."""

LETTERS = {
    "alder": """# Alder Mutual Holdings, Inc.

## Alder's Performance vs. the S&P 500

| Year | Per-Share Book Value of Alder | S&P 500 with Dividends | Relative Results |
|------|------|------|------|
| 2026 | 12.4 | 9.1 | 3.3 |
| 2027 | 8.8 | 14.2 | (5.4) |
| 2028 | 15.1 | 3.7 | 11.4 |
| 2029 | 10.6 | 11.0 | (0.4) |
| 2030 | 13.9 | 7.5 | 6.4 |
| Compounded Annual Gain 2026-2030 | 12.1 | 9.0 | 3.1 |
\f
To the Shareholders of Alder Mutual Holdings, Inc.:

Our per-share book value rose 13.9% in 2030. Over five years it has compounded at 12.1%, and that is the
figure by which we ask to be judged. A single year tells you little; five years begin to tell you something.

## Our Insurance Businesses

Our three insurers wrote $2.2 billion of premium. Two of them earned an underwriting profit; the third,
Meadowgate Casualty, did not, and the fault is mine. I let its growth run ahead of its pricing, and the
hail season of June cost us $44 million. We have since raised rates and shed the worst accounts.

## Capital Allocation

We bought back 1.8% of our shares at prices well below our estimate of intrinsic value, and we acquired
Pellow Fasteners of Akron for $210 million in cash. Its founders stay and run it as before. We prefer to
buy businesses we understand, with managers we trust, at prices that make sense.

We believe that a shareholder should think of himself as a part owner of a business, and we try to report
to you as we would wish to be reported to if our positions were reversed.

Marguerite O. Vance
Chairman of the Board
March 1, 2031
""",
    "kestrel": """Kestrel Capital Partners

Dear Fellow Owners,

2031 was a year of patience. Our intrinsic value per share grew by an estimated 9%, while the market price
of our stock fell 4%. We are content to let the two meet in their own time.

What We Own

Kestrel owns controlling stakes in six operating companies and minority stakes in eleven more. Operating
earnings rose to $318 million, led by Harrow Rail Services and the Tindall grocery chain. Our one mistake
of consequence was Ostler Medical: we paid too much, and we wrote down $27 million of goodwill this year.

| Segment | 2031 Earnings ($m) | 2030 Earnings ($m) |
|---|---|---|
| Rail services | 141 | 122 |
| Grocery | 96 | 90 |
| Medical supply | 18 | 35 |
| Other | 63 | 58 |

How We Think About Buybacks

We repurchase shares only when the price is clearly below what the business is worth, and only when doing
so leaves us with ample cash for the unexpected. We bought $85 million of stock in the fourth quarter.

Our annual meeting will be held on May 9 in Spokane. Come with questions; we will stay until they run out.

With gratitude for your trust,

Tobias R. Ferrante
Chairman and Chief Executive Officer
February 20, 2032
""",
    "quarry": """QUARRY HILL INVESTMENT PARTNERSHIP

2030 Annual Report to Limited Partners

To Our Limited Partners:

The partnership gained 11.7% in 2030 after all fees, against 8.2% for the S&P 500 including dividends.
Since inception in 2019 we have compounded at 10.4% a year against 8.9% for the index. We do not expect
to beat the index every year, and in three of the last eleven we did not.

Portfolio

We hold nineteen positions. The five largest make up 48% of capital. Our largest holding, a regional
water utility, rose 22% as regulators approved its first rate increase in six years. Our worst, a maker
of farm equipment, fell 31% when its dealers cut orders; we added to it and expect to keep it for years.

| Holding | Share of Capital | 2030 Return |
|---|---|---|
| Westmarch Water | 14% | 22% |
| Callan Farm Machinery | 6% | -31% |
| Ridley Paper | 9% | 7% |

Fees and Our Own Money

The general partner's own families have over 60% of their net worth in the partnership. We are paid only
on gains above 6% a year, so you and we prosper or suffer together.

Sincerely,

Ines Palacio
Managing Partner and Chair
January 30, 2031
""",
}

TRANSCRIPTS = {
    "lumen": """Lumen Grid Corporation (LGC) Q3 2031 Earnings Call
October 28, 2031 10:00 AM ET

Company Participants
Hana Okafor - Vice President, Investor Relations
Daniel Reyes - Chief Executive Officer
Priya Malhotra - Chief Financial Officer

Conference Call Participants
Samuel Burke - Harwick Securities
Lena Fischer - Oriel Capital

Operator

Good morning, ladies and gentlemen, and welcome to the Lumen Grid third quarter 2031 earnings conference
call. All lines are in listen-only mode. I would now like to turn the call over to Hana Okafor.

Hana Okafor

Thank you, operator, and thank you all for joining us. With me are Daniel and Priya. Our remarks include
forward-looking statements; actual results may differ.

Daniel Reyes

Thanks, Hana. We delivered revenue of $1.42 billion, up 9%, and our backlog reached a record $6.1 billion.
Transmission orders were strong, and our new transformer plant in Ohio started shipping in September.

Priya Malhotra

Gross margin was 31.4%, up 120 basis points. Free cash flow was $188 million in the quarter.

Question-and-Answer Session

Operator

Thank you. Our first question comes from Samuel Burke with Harwick Securities. Your line is open.

Samuel Burke

Thanks. Daniel, can you talk about pricing on the new transformer contracts?

Daniel Reyes

Sure, Sam. Pricing has held, and the contracts signed this quarter carry escalators for copper and steel.

Operator

Our next question comes from Lena Fischer with Oriel Capital.

Lena Fischer

Priya, how should we think about margins into next year?

Priya Malhotra

We expect modest expansion as the Ohio plant ramps. We will give formal guidance in February.

Operator

That concludes our question-and-answer session. Thank you for participating. You may now disconnect.
""",
    "corvid": """Corvid Pharmaceuticals Second Quarter 2031 Results Conference Call

Corporate Participants:
Mireille Dubois -- Chief Executive Officer
Arjun Patel -- Chief Financial Officer
Tessa Lindgren -- Head of Investor Relations

Analysts:
Oskar Brandt -- Pembury & Co. -- Analyst
Yuki Tanaka -- Stellwood Research -- Analyst

Presentation

Operator: Good afternoon and thank you for standing by. Welcome to Corvid's second quarter call. At this
time all participants are in a listen-only mode. I will now hand the call to Tessa Lindgren.

Tessa Lindgren -- Head of Investor Relations: Thank you. Before we begin, please note that today's
discussion contains forward-looking statements.

Mireille Dubois -- Chief Executive Officer: Thank you, Tessa. Net product sales of Veltara reached $412
million, and enrollment in our phase three trial of CRV-221 finished a month early.

Arjun Patel -- Chief Financial Officer: Operating expenses were $298 million. We ended the quarter with
$2.3 billion in cash and investments.

Questions and Answers

Operator: Our first question is from Oskar Brandt with Pembury.

Oskar Brandt -- Pembury & Co. -- Analyst: Thanks for taking my question. What drove the Veltara upside?

Mireille Dubois -- Chief Executive Officer: Mostly new patient starts in Europe, Oskar.

Operator: The next question is from Yuki Tanaka with Stellwood Research.

Yuki Tanaka -- Stellwood Research -- Analyst: Can you size the CRV-221 filing timeline?

Arjun Patel -- Chief Financial Officer: We expect to file in the first half of 2032.

Operator: This concludes today's conference call. You may now disconnect.
""",
    "sable": """SABLE OUTDOOR GROUP, INC. FISCAL 2031 FOURTH QUARTER EARNINGS CALL

OPERATOR: Welcome to the Sable Outdoor Group fourth quarter earnings call. Today's call is being recorded.
I would like to introduce your host, Chief Executive Officer Rowan Ashby. Please go ahead.

ROWAN ASHBY: Thank you, and good morning. Comparable store sales rose 4.2% in the quarter. Our camping and
footwear categories led, and e-commerce grew 14%. We opened nine stores and closed two.

MAE COLLINS: Thanks, Rowan. Gross margin expanded 60 basis points on lower freight. Inventory ended the
year down 7% from last year, in line with our plan.

OPERATOR: We will now begin the question-and-answer session. The first question comes from Grant Holloway
of Tessier Partners.

GRANT HOLLOWAY: Good morning. Rowan, what are you seeing in January trends?

ROWAN ASHBY: January is off to a healthy start, Grant, particularly in outerwear.

OPERATOR: Our next question comes from Bea Moreno of Linfield Securities.

BEA MORENO: Mae, any change to the capital spending plan?

MAE COLLINS: We still expect about $120 million, mostly for new stores and the Reno distribution center.

OPERATOR: There are no further questions. I would like to turn the call back to Rowan Ashby.

ROWAN ASHBY: Thank you all for joining us today. We look forward to speaking with you next quarter.
""",
}

RELEASES = {
    "brightwater": """# Brightwater Foods Reports Fourth Quarter and Fiscal 2031 Results

MINNEAPOLIS, Feb. 12, 2032 -- Brightwater Foods, Inc. (NYSE: BWF) today reported results for the fourth
quarter and fiscal year ended December 31, 2031.

## Fourth Quarter Highlights

- Net sales of $1.84 billion, up 6.2% year over year
- GAAP diluted earnings per share of $1.12; adjusted (non-GAAP) diluted EPS of $1.21
- Operating cash flow of $265 million

"Our frozen and snacks segments both grew volume this quarter," said Clara Whitfield, Chief Executive
Officer. "We enter 2032 with a stronger portfolio and a lighter balance sheet."

## Fiscal 2032 Outlook

The company expects net sales growth of 3% to 5% and adjusted diluted EPS of $4.60 to $4.80.

## Condensed Consolidated Statements of Earnings (unaudited, in millions except per share)

| | Q4 2031 | Q4 2030 |
|---|---|---|
| Net sales | 1,840 | 1,733 |
| Cost of sales | 1,262 | 1,204 |
| Operating income | 214 | 189 |
| Net earnings | 152 | 131 |
| Diluted earnings per share | 1.12 | 0.96 |

## Forward-Looking Statements

This release contains forward-looking statements that involve risks and uncertainties.

Investor contact: Owen Brandvold, investors@brightwaterfoods.example
""",
    "tessellate": """Tessellate Software Announces Second Quarter Fiscal 2031 Financial Results

Total revenue of $612 million, up 21% year over year
Subscription revenue of $571 million, up 24% year over year
GAAP operating margin of 6%; non-GAAP operating margin of 24%

AUSTIN, Texas, Aug. 30, 2031 -- Tessellate Software, Inc. (NASDAQ: TSLT) announced financial results for
its second quarter of fiscal 2031, ended July 31, 2031.

Revenue for the quarter was $612 million. GAAP net income per diluted share was $0.14, compared with a
loss of $0.05 per share in the prior-year quarter. Non-GAAP net income per diluted share was $0.61.

Guidance: for the third quarter, Tessellate expects total revenue of $640 million to $645 million and
non-GAAP net income per diluted share of $0.63 to $0.65.

Conference call: Tessellate will host a webcast today at 2:00 p.m. Central Time to discuss the results.

Condensed Consolidated Balance Sheets (in thousands)

| | July 31, 2031 | January 31, 2031 |
|---|---|---|
| Cash and cash equivalents | 1,204,551 | 1,088,102 |
| Accounts receivable, net | 389,220 | 455,981 |
| Deferred revenue | 1,011,436 | 1,097,774 |

Reconciliation of GAAP to Non-GAAP Operating Income

| | Q2 FY31 |
|---|---|
| GAAP operating income | 36,720 |
| Stock-based compensation | 101,334 |
| Non-GAAP operating income | 146,880 |

About Tessellate: Tessellate builds planning software for manufacturers.
""",
    "harlow": """HARLOW MINING CORPORATION REPORTS FIRST QUARTER 2031 RESULTS

VANCOUVER, May 6, 2031 -- Harlow Mining Corporation (TSX: HML) reported results for the three months ended
March 31, 2031. All amounts are in U.S. dollars unless stated otherwise.

First quarter highlights:
Copper production of 41,200 tonnes, up 8% from the first quarter of 2030.
Revenue of $388 million compared with $351 million in the same quarter last year.
Net income attributable to shareholders of $52 million, or $0.19 per share.
All-in sustaining costs of $2.41 per pound of copper.

Outlook: Harlow reaffirms its 2031 guidance of 165,000 to 175,000 tonnes of copper.

Condensed consolidated statements of income (unaudited, in millions of dollars)

Revenue                         388      351
Cost of sales                  (241)    (229)
General and administrative      (19)     (18)
Net income                       52       41

The company's interim financial statements and management's discussion and analysis are available on
its website. A conference call to discuss the results will be held on May 7, 2031.
""",
}

SLIDES = {
    "lumen_deck": """Lumen Grid Corporation
Investor Day 2031
September 17, 2031
\f
Safe Harbor Statement
- This presentation contains forward-looking statements
- Actual results may differ materially
- Non-GAAP measures are reconciled in the appendix
\f
Agenda
- Strategy overview
- Transmission growth
- Financial framework
- Q&A
\f
Key Highlights
- Record backlog: $6.1B
- 3 new plants since 2029
- 31% gross margin, up 120 bps
- 40% of revenue from grid upgrades
\f
Transmission Growth
- Utility capex up 11% per year through 2035
- Our share of large transformers: 18%
- Ohio plant: 400 units a year at full rate
\f
Financial Framework 2032-2035
- Revenue growth: 7-9% a year
- Operating margin: 16-18%
- Free cash flow conversion above 90%
\f
Q&A
""",
    "corvid_deck": """Corvid Pharmaceuticals
Second Quarter 2031 Results
August 5, 2031
\f
Forward-Looking Statements
Statements in this presentation are subject to risks and uncertainties
\f
Q2 2031 at a Glance
• Veltara net sales: $412M (+27% YoY)
• CRV-221 phase 3 enrollment complete
• Cash and investments: $2.3B
\f
Veltara Performance
• U.S. new patient starts +18%
• Europe launches in 6 countries
• Payer coverage: 82% of lives
\f
Pipeline Milestones
• CRV-221: topline data Q1 2032
• CRV-305: phase 2 start Q4 2031
• CRV-410: IND filing 2032
\f
2031 Guidance
• Veltara net sales: $1.60B-$1.65B
• Operating expenses: $1.15B-$1.20B
\f
Thank You
""",
    "pelham_deck": """Slide 1
Pelham Logistics
Strategy Update
November 2031

Slide 2
Agenda
1. Where we are
2. Network plan
3. Capital priorities

Slide 3
Where We Are
- 212 depots in 14 states
- 9,400 trucks, average age 4.1 years
- On-time delivery 96.8%

Slide 4
Network Plan
- Close 12 small depots
- Open 4 regional hubs
- Automated sorting in 60% of volume by 2034

Slide 5
Capital Priorities
- Fleet renewal: $310M a year
- Hubs: $450M over 3 years
- Dividend: grow with earnings

Slide 6
Key Takeaways
- Fewer, larger, automated sites
- Lower cost per parcel
- Questions?
""",
}

PRESS = {
    "orchard": """FOR IMMEDIATE RELEASE

Orchard Robotics Unveils Harvest Assistant for Apple Growers

YAKIMA, Wash., March 3, 2032 /PRNewswire/ -- Orchard Robotics, a maker of farm automation equipment,
today announced Harvest Assistant, a picking platform that lets one worker do the work of three.

Harvest Assistant carries pickers along the rows on a self-driving deck and moves full bins to the
headland without a tractor. Field trials in 2031 covered 1,200 acres across four farms.

"Growers told us they could not find enough hands at harvest," said Imani Castellanos, chief executive
officer of Orchard Robotics. "This machine keeps the crews they have safer and far more productive."

Harvest Assistant will ship in July and is available for purchase or seasonal lease.

About Orchard Robotics
Orchard Robotics designs autonomous equipment for tree-fruit growers. It is based in Yakima, Washington.

Media Contact:
Lorenzo Hale
press@orchardrobotics.example

###
""",
    "meridian": """Meridian Health and Coastway Insurance Form Partnership to Expand Rural Clinics

PORTLAND, Maine, June 10, 2031 (BUSINESS WIRE) -- Meridian Health System and Coastway Insurance Group
have announced a five-year partnership to open twelve primary care clinics in rural Maine and New
Hampshire, the first of them in Rumford this autumn.

Under the agreement, Coastway will fund construction and Meridian will staff and operate the clinics.
Members of any health plan will be welcome.

"Too many families drive an hour to see a doctor," said Dr. Helen Marchetti, president of Meridian.
"These clinics bring care back to the towns that lost it."

Coastway chief executive Paul Oduya added: "Healthy communities are good for everyone, including insurers."

About Meridian Health System
Meridian operates six hospitals and forty clinics in northern New England.

About Coastway Insurance Group
Coastway provides health and property insurance to 1.1 million members.

Media inquiries: communications@meridianhealth.example
""",
    "talbot": """Talbot Bank Names Ruth Okonkwo Chief Financial Officer

CHARLOTTE, N.C., Jan. 8, 2032 -- Talbot Bank Corporation is pleased to announce the appointment of Ruth
Okonkwo as executive vice president and chief financial officer, effective February 1.

Ms. Okonkwo joins Talbot from Verity Financial, where she served as treasurer for seven years. She
succeeds Alan Pruitt, who will retire after twenty-two years with the bank.

"Ruth brings deep experience in balance sheet management and a record of building strong teams," said
Talbot chief executive Marcus Lee. "We thank Alan for his many years of service."

About Talbot Bank Corporation
Talbot Bank is a regional bank with $38 billion in assets and 190 branches in the Carolinas.

Press contact
Dana Whitlock, Talbot Bank Corporate Communications, 704-555-0143

-30-
""",
}

SOLICITATIONS = {
    "rfq_it": """U.S. Department of the Interior
Bureau of Land Records

Request for Quotation No. 140D-32-Q-0017
Cloud Hosting and Help Desk Support Services

Set-aside: Total small business set-aside. NAICS code 541519.
Quotations are due by 3:00 p.m. Eastern Time on April 12, 2032.

Section L - Instructions to Offerors

Offerors shall submit a technical volume of no more than 20 pages and a price volume. Offerors must
identify key personnel and provide three references for similar work.

Section M - Evaluation Factors for Award

The Government will evaluate quotations on technical approach, past performance and price. Technical
approach and past performance, combined, are more important than price.

Schedule of Supplies/Services

| CLIN | Description | Qty | Unit |
|---|---|---|---|
| 0001 | Cloud hosting, base year | 12 | month |
| 0002 | Help desk support, base year | 12 | month |
| 1001 | Cloud hosting, option year 1 | 12 | month |

The contractor shall maintain 99.9% availability and shall respond to priority-one tickets within 30 minutes.
""",
    "pws_custodial": """PERFORMANCE WORK STATEMENT (PWS)
Custodial Services, Federal Building 4, Tulsa, Oklahoma

1. GENERAL

1.1 Scope. The contractor shall provide all personnel, equipment, supplies and supervision necessary to
perform custodial services in Federal Building 4, a six-story office building of 182,000 square feet.

1.2 Period of Performance. One base year and four option years.

2. REQUIREMENTS

2.1 The contractor shall clean all restrooms daily and restock paper products and soap.
2.2 The contractor shall vacuum carpeted areas three times a week and damp-mop hard floors daily.
2.3 The contractor shall remove trash and recycling from all offices each evening.
2.4 The contractor shall report building damage to the Contracting Officer's Representative within 24 hours.

3. PERFORMANCE STANDARDS

Performance will be monitored in accordance with the Quality Assurance Surveillance Plan (QASP). An
acceptable quality level of 95% applies to each task in paragraph 2.

4. DELIVERABLES

The contractor shall deliver a monthly status report and a quality control plan within 15 days of award.
""",
    "qasp": """QUALITY ASSURANCE SURVEILLANCE PLAN

Grounds Maintenance Services, Veterans Medical Center, Boise, Idaho

1. Purpose. This plan describes how the Government will evaluate the contractor's performance under the
performance work statement. It is a Government document; the contractor's own quality control plan is
separate.

2. Roles. The Contracting Officer's Representative (COR) performs surveillance and documents the results.
Only the Contracting Officer may change the contract.

3. Methods of Surveillance. The COR will use random sampling, periodic inspection and customer complaints.

| Task | Standard | Method | Acceptable Quality Level |
|---|---|---|---|
| Mowing | Grass between 2 and 4 inches | Random sampling | 95% |
| Snow removal | Walks clear by 6:00 a.m. | Periodic inspection | 100% |
| Litter pickup | No litter visible | Customer complaint | 90% |

4. Unacceptable Performance. When performance falls below the acceptable quality level, the COR will issue a
corrective action request and the contractor shall respond within five working days.
""",
    "amendment": """AMENDMENT OF SOLICITATION/MODIFICATION OF CONTRACT

1. Contract ID code: J
2. Amendment/Modification No.: 0002
3. Effective date: 05/14/2032
4. Solicitation No.: 36C259-32-R-0044
5. Issued by: Department of Veterans Affairs, Network Contracting Office 19

Description of amendment:

The purpose of this amendment is to (1) extend the date for receipt of offers, (2) answer questions from
prospective offerors, and (3) revise the price schedule.

1. The due date for proposals is extended from May 28, 2032 to June 11, 2032 at 2:00 p.m. Mountain Time.

2. Questions and answers:
Q1. Will the Government accept electronic signatures on the SF-30? A1. Yes.
Q2. Is the incumbent contractor eligible to propose? A2. Yes.

3. CLIN 0003 quantity is changed from 40 to 55 each.

Offerors must acknowledge receipt of this amendment prior to the hour and date specified in the
solicitation. Except as provided herein, all terms and conditions of the solicitation remain unchanged.
""",
}
