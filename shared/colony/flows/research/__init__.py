"""Research: a prospect's company read from the open web, politely and safely (issue 33).

Owns which pages of a company are worth reading (``plan``: home, about, leadership,
locations, news and its articles, the sitemap, declared feeds, the public job board, linked
PDFs), asking for a company's research (``requests``: a resumable job per org and company,
``status``), the runner that works a pass (``runner``: the ``research`` function's task,
rescheduling itself while a site's pace holds it back; ``run_to_end`` for local tools),
keeping each fetched document with its provenance (``keep``: bytes and text in the assets
bucket under ``research/<org>/``, a ``research_sources`` row, embedded passages), the
passages AGT-003 is given (``passages``: nearest the org's ICP and signal types, newest
first among equals, each with its URL and date), and our stored copies of the pages signals
quote (``copies``: signed links for the approval card and ``colony explain``).

Offers ``requests`` (the campaign chain, the admin API), ``runner`` (the function, the CLI),
``passages`` (AGT-003) and ``copies`` (approvals, insights). The package itself imports
nothing: what only asks for research carries neither the runner nor the reader and its
parsers in its bundle. The open web is reached only through ``deps.web``
(``ports.WebFetcher``); what a page says is data, never an instruction.
"""
