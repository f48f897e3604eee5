"""Writes for endpoints, search models, evaluations and the snapshots fetched for them.

Modules, one concern each:
- `endpoints`: endpoints and search models (create, update, delete, restore, test query);
- `lifecycle`: an evaluation from create to delete, with its metrics and transformers;
- `keywords`: keyword lists (cleaning, limits, upload, the stored rows);
- `fetch`: claiming, requesting and storing keywords' results.

Callers use `from evaluations import services` and the names below; a test that replaces
one of them patches it here, where the tasks look it up.
"""

from evaluations.services.endpoints import (
    MAX_TIMEOUT_SECONDS,
    endpoint_create,
    endpoint_delete,
    endpoint_restore,
    endpoint_secret_headers,
    endpoint_test,
    endpoint_update,
    is_http_url,
    search_model_create,
    search_model_delete,
    search_model_headers_shown,
    search_model_restore,
    search_model_secret_headers,
    search_model_test,
    search_model_update,
)
from evaluations.services.fetch import (
    DEFAULT_SNAPSHOT_DEPTH,
    evaluation_fetch_complete,
    keyword_fetch_claim,
    keyword_fetch_claims_renew,
    keyword_fetch_fail,
    keyword_fetch_store,
    keywords_fetch,
    keywords_fetch_abandon,
    keywords_fetch_enqueue,
    keywords_fetch_requeue_lapsed,
    snapshot_depth,
)
from evaluations.services.keywords import (
    MAX_KEYWORD_LENGTH,
    MAX_KEYWORDS,
    MAX_UPLOAD_ERRORS,
    KeywordList,
    evaluation_keywords_replace,
    keyword_lines,
    keyword_rows,
    keyword_text_clean,
    keyword_text_problem,
    keywords_clean,
    keywords_from_upload,
    keywords_validate,
)
from evaluations.services.lifecycle import (
    evaluation_archive,
    evaluation_clone,
    evaluation_create,
    evaluation_delete,
    evaluation_finish,
    evaluation_pause,
    evaluation_restore,
    evaluation_retry_failed,
    evaluation_start,
    evaluation_update,
)

__all__ = [
    "DEFAULT_SNAPSHOT_DEPTH",
    "MAX_KEYWORDS",
    "MAX_KEYWORD_LENGTH",
    "MAX_TIMEOUT_SECONDS",
    "MAX_UPLOAD_ERRORS",
    "KeywordList",
    "endpoint_create",
    "endpoint_delete",
    "endpoint_restore",
    "endpoint_secret_headers",
    "endpoint_test",
    "endpoint_update",
    "evaluation_archive",
    "evaluation_clone",
    "evaluation_create",
    "evaluation_delete",
    "evaluation_fetch_complete",
    "evaluation_finish",
    "evaluation_keywords_replace",
    "evaluation_pause",
    "evaluation_restore",
    "evaluation_retry_failed",
    "evaluation_start",
    "evaluation_update",
    "is_http_url",
    "keyword_fetch_claim",
    "keyword_fetch_claims_renew",
    "keyword_fetch_fail",
    "keyword_fetch_store",
    "keyword_lines",
    "keyword_rows",
    "keyword_text_clean",
    "keyword_text_problem",
    "keywords_clean",
    "keywords_fetch",
    "keywords_fetch_abandon",
    "keywords_fetch_enqueue",
    "keywords_fetch_requeue_lapsed",
    "keywords_from_upload",
    "keywords_validate",
    "search_model_create",
    "search_model_delete",
    "search_model_headers_shown",
    "search_model_restore",
    "search_model_secret_headers",
    "search_model_test",
    "search_model_update",
    "snapshot_depth",
]
