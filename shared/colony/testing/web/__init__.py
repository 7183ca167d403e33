"""What the stand-in web serves (``colony.testing.web_server`` serves it): the vocabulary of a
site (``pages``), generated company sites (``sites``), public job boards (``boards``),
hand-written PDFs (``pdf``), the hard cases (``cases``) and the demo world's companies
(``demo``). Local only: deployed code never imports it.
"""
