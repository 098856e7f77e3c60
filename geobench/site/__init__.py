"""The results site: static HTML pages built from the published leaderboards' records
(``<stem>.json``), claims CSVs, results CSVs and plots (``geobench site``)."""
