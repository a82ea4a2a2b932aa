"""The report's pages, one module per page (overview, answer, over_time, detail, target, candidates),
with what they share: page.py (the page frame and common tables), html.py (escaping and formatting),
story.py (the sentences), and the scripts the pages load (tables.js, picker.js)."""
