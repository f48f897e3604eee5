"""Judgment files in other tools' formats, read into judgments.imports.ParseResult and
written from (keyword, doc_id, grade) rows: one module a format (`trec`, `quepid_csv`,
`rre`, `ltr`, `workbench`) and `recognise`, which names what a file is and parses it."""
