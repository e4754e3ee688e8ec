"""What users read and what we write: the console table, result.json (read and write), JUnit,
Markdown, the GitHub summary, the HTML report, and the masking of secrets on the way out.

Rules of this package: it may use `rules/` (the catalog, the evidence types, the judge) and
nothing above it (no editor, no launcher, no runner).
"""
