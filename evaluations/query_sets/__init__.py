"""Query sets: a team's named, versioned keyword lists, and evaluations created from them.

- `services`: create, edit (a changed list is a new version), archive, restore; an
  evaluation created from a version, or saving its typed keywords as a new set;
- `selectors`: reads for the pages and API, and the query set's access function;
- `file_formats`: an uploaded file recognised (plain text, CSV, Quepid's basic CSV, a
  Workbench query set) and read into keywords, with what it was read as and why;
- `forms`, `views`: their pages; `api`: their REST API.

The models are in evaluations.models.query_sets (the set itself is KeywordSet).
"""
