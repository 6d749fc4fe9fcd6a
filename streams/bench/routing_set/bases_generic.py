"""Invented documents that must stay `generic`, several with decoy words of the typed kinds.

All names, places and figures are made up. `make.py` renders each in one shape."""

GENERIC = {
    "maintenance": """Notice to Residents: Water Shut-Off

Linden Court Apartments, Buildings A and B

The water supply to Buildings A and B will be shut off on Thursday, May 14, from 9:00 a.m. until about
1:00 p.m., while the plumbers replace the main valve in the basement. Please fill a kettle and a few jugs
the night before. Do not run the dishwasher or washing machine during the shut-off.

When the water returns it may look cloudy for a few minutes. Run the cold tap until it is clear. If you
notice a leak or low pressure afterwards, call the management office at 555-0182.

Parking in the rear lot will be limited that morning because the plumbers' van needs the loading space.

Thank you for your patience.
The Management Office
""",
    "novel": """Chapter Seven

The rain had not stopped for three days when Esther finally sat down at the kitchen table to write the
letter she had been putting off since the funeral.

Dear John, she began, and then stopped, because she did not know what came after that. The farm was
hers now, the cows and the debts and the leaking roof of the barn. Outside, the dog barked at nothing.

She wrote that the hay was in, that the neighbours had been kind, that their mother's roses had come
back against all expectation. She did not write that she was frightened, or that she had found the
bank's notices stuffed behind the flour tin.

Sincerely, she wrote at last, and crossed it out, and wrote Your sister instead. Then she folded the page
twice and left it under the salt cellar, where it stayed until morning, when the postman came up the lane
with his collar turned against the wind and asked if she had anything to send.
""",
    "encyclopaedia": """Tarn Valley Railway

The Tarn Valley Railway was a narrow-gauge line in the fictional county of Wexmoor that carried slate and
passengers between Abertarn and the harbour at Porth Wyn from 1871 to 1949.

History

The line was promoted by a group of quarry owners who formed the Tarn Valley Railway Company in 1868.
Construction took three years. At its height in 1901 the railway carried 94,000 tons of slate a year.
Competition from road haulage after the First World War reduced traffic, and passenger services ended
in 1931.

Route

The line ran for 13 miles, climbing 620 feet through two tunnels and over the Cwm Du viaduct.

Preservation

A volunteer society restored a two-mile section in 1968. Its locomotive Gwenllian, built in 1877, still
runs on summer weekends.

See also: Slate industry in Wexmoor; List of narrow-gauge railways.
""",
    "recipe": """Lemon and Thyme Roast Chicken

Serves 4. Preparation 20 minutes, cooking 1 hour 20 minutes.

Ingredients
- 1 whole chicken, about 1.6 kg
- 2 lemons
- 6 sprigs of thyme
- 4 cloves of garlic
- 2 tablespoons olive oil
- salt and pepper

Method
1. Heat the oven to 200°C. The chicken shall rest at room temperature for 30 minutes first; a cold bird
cooks unevenly.
2. Halve one lemon and push it into the cavity with half the thyme and the garlic.
3. Rub the skin with oil, salt, pepper and the remaining thyme leaves.
4. Roast for 1 hour 20 minutes, basting twice, until the juices run clear.
5. Rest for 15 minutes under foil, then carve and squeeze over the second lemon.

Tip: sow a pot of thyme on the windowsill in spring and you will never need to buy it again.
""",
    "minutes": """Harrow Green Garden Club
Minutes of the Monthly Meeting, 4 March 2032

Present: 17 members. Apologies: 3.

1. The chair opened the meeting at 7:00 p.m. and welcomed two new members.

2. The minutes of the February meeting were approved.

3. Treasurer's report: the club holds £1,842. The plant sale raised £416.

4. Spring show: entries close on 20 April. Mrs. Pardoe will call each exhibitor to confirm their classes.

5. Talk: Dr. Amos Keel spoke on growing tomatoes under glass. A lively Q&A session followed, mostly about
blight and whether to pinch out side shoots.

6. Any other business: the shed roof needs repair; three members volunteered.

The meeting closed at 8:40 p.m. Next meeting: 1 April 2032.
""",
    "manual": """Section 4: Cleaning and Maintenance

Model KV-220 Espresso Machine

4.1 Daily cleaning
Empty the drip tray and the grounds container after each use. Rinse the portafilter under warm water and
wipe the steam wand with a damp cloth immediately after frothing milk.

4.2 Weekly cleaning
Remove the shower screen with the supplied tool and soak it in warm water for ten minutes. Run a blank
shot through the group head to flush out old coffee oils.

4.3 Descaling
Descale every two months in hard-water areas. Dissolve one sachet of descaler in one litre of water,
pour it into the tank and follow the descaling programme (press and hold the two-cup button for five
seconds). Rinse the tank and run two full tanks of fresh water through the machine afterwards.

Warning: never immerse the machine in water. Unplug it before cleaning.
""",
    "blog": """Three Days in Lisbon on a Budget

We landed in Lisbon on a grey Tuesday and by lunchtime the sun was out over the Tagus. Here is how we
spent three days there for under 300 euros each, flights aside.

Day one: the Alfama on foot. Get lost on purpose; every wrong turn ends at a viewpoint. We ate grilled
sardines at a tiny place with four tables and paid 11 euros for two.

Day two: the tram to Belém, custard tarts, and the monastery. Go early; by eleven the queue doubles.

Day three: a day trip to Sintra by train. The palaces are crowded, but the walk up through the forest
is quiet and cool.

A funny note: our hostel was a converted office, and the breakfast room still had a framed photo of the
old company's shareholders on the wall, all moustaches and stiff collars.
""",
    "hr_faq": """Frequently Asked Questions: Parental Leave Policy

Who is eligible?
All employees who have completed six months of service are eligible for paid parental leave.

How much leave can I take?
Birth parents may take up to 20 weeks of paid leave. Other parents, including adoptive and foster
parents, may take up to 16 weeks.

Do I have to take the leave all at once?
No. Leave may be taken in up to three blocks within 12 months of the child's arrival.

What about my benefits?
Health insurance and retirement contributions continue during leave as if you were working.

How do I apply?
Tell your manager at least eight weeks before the expected start date and submit the request through
the HR portal. Questions can be sent to the people team at any time.
""",
    "abstract": """Seasonal variation of nitrate in three upland streams

Abstract

We measured nitrate concentrations weekly in three upland streams from 2027 to 2030. Concentrations
peaked in late winter and fell by 60% during the growing season. Streams draining conifer plantations
had higher winter peaks than those draining moorland (p < 0.01). We conclude that forest management,
not rainfall alone, controls the winter nitrate pulse.

Keywords: nitrate; upland streams; land use; seasonality

References

1. Ambler R, Coyle T. Nitrogen export from managed forests. J Hydrol Sci. 2024;61(2):211-224.
2. Baird S, Nunes L, Ortega P. Winter flushing of nutrients in peat catchments. Freshw Biol. 2025;70:88-97.
3. Castell M. Streams of the northern uplands. Wexmoor University Press; 2022.
""",
    "news": """Retailer's shares slide as holiday sales disappoint

By Nora Whitcombe, Staff Reporter

Shares of Danforth Stores fell 9% on Thursday after the department store chain said its holiday sales
had come in below what analysts had expected.

Danforth said sales at stores open at least a year rose 1.1% in November and December, well short of the
3% that Wall Street had forecast. The company blamed warm weather, which hurt sales of coats and boots.

"It was a tough season for anyone selling winter clothing," said Pia Lundqvist, a retail analyst who
follows the company. She said Danforth's online business, which grew 12%, was a bright spot.

The chain is due to publish its full-year figures in March. Its chief executive, Gareth Moss, has
promised to close underperforming stores and invest more in the website.
""",
    "council": """City of Fenwick Falls
City Council Regular Meeting Agenda
Tuesday, June 2, 2032, 6:30 p.m., Council Chambers

1. Call to order and roll call
2. Pledge of allegiance
3. Public comment (three minutes per speaker)
4. Consent agenda
   a. Minutes of May 19, 2032
   b. Payment of bills
5. Public hearing: rezoning of 410 Mill Road from industrial to mixed use
6. Ordinance 2032-14: speed limit on Elm Street (second reading)
7. Resolution 2032-31: agreement with the county for library services
8. Report of the city manager
9. Council comments
10. Adjournment

Agendas and supporting documents are available at the city clerk's office.
""",
    "readme": """# tidepool

A small command-line tool that converts tide tables into calendar files.

## Install

    pip install tidepool

## Usage

    tidepool convert --station 8443970 --year 2032 --out tides.ics

The tool reads the station's published predictions and writes one calendar event per high and low
tide. Use `--only high` to skip low tides.

## Options

| Option | Meaning |
|---|---|
| --station | station identifier |
| --year | calendar year |
| --tz | time zone for the events |

## Contributing

Bug reports and pull requests are welcome. Please run the tests with `pytest` before sending a change.

## License

MIT
""",
    "lease": """RESIDENTIAL LEASE AGREEMENT (EXCERPT)

4. RENT. The Tenant shall pay rent of $1,450 per month, in advance, on the first day of each month. Rent
received after the fifth day of the month shall incur a late fee of $50.

5. SECURITY DEPOSIT. The Tenant shall pay a security deposit of $1,450 on signing. The Landlord shall
return the deposit within 30 days after the Tenant vacates, less any amounts for damage beyond normal
wear and tear.

6. USE OF PREMISES. The premises shall be used only as a private residence. The Tenant shall not sublet
any part of the premises without the Landlord's written consent.

7. MAINTENANCE. The Tenant shall keep the premises clean and shall promptly report any needed repairs.
The Landlord shall maintain the roof, plumbing, heating and electrical systems.

8. PETS. No pets shall be kept on the premises without the Landlord's written consent.
""",
    "newsletter": """Brook Lane Primary School Newsletter
Spring Term, Third Edition

Dear Parents and Carers,

What a busy few weeks it has been! Year 4 visited the science museum and came back full of questions
about magnets. Year 6 have started their residential trip preparations; kit lists went home on Monday.

Sports day will be held on Friday 19 June. Please send your child with a water bottle, a hat and sun
cream. Parents are welcome to watch from 1:30 p.m.

Our book fair raised £640 for the library, which will buy around ninety new books. Thank you to every
family who came along.

Reminder: the school will be closed on Monday 25 May for the bank holiday.

With best wishes,
Mrs. Adaeze Holt
Headteacher
""",
}
