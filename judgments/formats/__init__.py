"""Judgment files in other tools' formats, read into judgments.imports.ParseResult and
written from (keyword, doc_id, grade) rows: one module a format (`trec`, `quepid_csv`,
`rre`, `ltr`, `workbench`), `recognise`, which names what a file is and parses it, and
`write`, which picks a format's writer for the exports."""
