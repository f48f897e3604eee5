"""What a judge run would cost before it starts, counted as judges.token_counts counts
every call (the budget guard's figure for the next call is the same count).

Tokens in are measured on the real prompts: a sample of the pairs the run would ask
about (the first SAMPLE_PAIRS, in the run's order and batches) is rendered with the
judge's template and counted. Each batch's count is split into a part every call carries
(system prompt, template, keyword, scale, JSON schema) and a part per document, so the
total follows the number of calls and of pairs. Tokens out as token_counts expects them.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from evaluations.models import Evaluation, Snapshot
from judges import batch_claiming, calls
from judges.core.prompts import PromptError, build_prompt, render_documents
from judges.local_graders import local_gradable_count
from judges.models import CALLED_PROVIDERS, Judge, JudgeAnswer
from judges.run_selectors import token_cost
from judges.token_counts import prompt_tokens, text_tokens, tokens_out_expected
from judgments import scales as scale_lookup

SAMPLE_PAIRS = 20
KEY_CHUNK = 5000


@dataclass(frozen=True)
class RunEstimate:
    pair_count: int
    """Pairs the run would ask about now (its mode decides which)."""
    cached_count: int
    """Of those, pairs the judge's cache answers (0 when asked to refresh)."""
    asked_count: int
    call_count: int
    """One call per batch of one keyword's pairs (lanes that split a keyword make more)."""
    sampled_count: int
    tokens_in: int
    tokens_out: int
    tokens_out_source: str
    cost: Decimal | None
    currency: str
    problem: str = ""
    """Why no estimate could be made (the scale is gone, the template cannot render)."""
    makes_calls: bool = True
    """False for a judge that grades here (a clicks grader): no call, no cost, no cache."""
    gradable_count: int | None = None
    """Of the pairs, how many a judge that grades here would grade now (a clicks grader:
    those with enough impressions in its window); None for a judge that calls out."""

    @property
    def ungradable_count(self) -> int | None:
        """Of the pairs, how many such a judge would fail now."""
        return None if self.gradable_count is None else self.pair_count - self.gradable_count


def _batches_of(pairs: list[tuple[int, int]], batch_size: int) -> list[list[int]]:
    """Snapshot ids in the run's batches: consecutive pairs of one keyword, batch_size at
    most (the pairs come in keyword order)."""
    out: list[list[int]] = []
    last_keyword = None
    for snapshot_id, keyword_id in pairs:
        if keyword_id != last_keyword or len(out[-1]) >= batch_size:
            out.append([])
            last_keyword = keyword_id
        out[-1].append(snapshot_id)
    return out


def judge_run_estimate(*, judge: Judge, evaluation: Evaluation, mode: str,
                       refresh_cache: bool = False) -> RunEstimate:
    """Calls, tokens and cost of the run `run_start` would begin now with these choices."""
    from judges.runs import pairs_to_ask  # runs imports the tasks, which import this module

    pairs = pairs_to_ask(evaluation=evaluation, mode=mode, judge_user=judge.user)
    empty = dict(pair_count=len(pairs), cached_count=0, asked_count=len(pairs), call_count=0,
                 sampled_count=0, tokens_in=0, tokens_out=0, tokens_out_source="",
                 cost=None, currency=judge.price_currency)
    scale = scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale)
    if scale is None:
        return RunEstimate(**empty, problem=f"the evaluation's scale {evaluation.scale!r} "
                                            "is gone")
    if judge.provider not in CALLED_PROVIDERS:
        count = local_gradable_count(judge.provider)
        return RunEstimate(**{**empty, "cost": Decimal(0)}, makes_calls=False,
                           gradable_count=(count(judge=judge, evaluation=evaluation,
                                                 pairs=pairs) if count else None))
    template, provider = calls.template_for(judge, scale.scale), calls.provider_for(judge)
    snapshots = {s.pk: s for s in Snapshot.objects.select_related("keyword").filter(
        pk__in=[snapshot_id for snapshot_id, _ in pairs]).only(
        "pk", "doc_id", "position", "name", "image", "fields", "keyword__text")}
    keys = {snapshot_id: batch_claiming.answer_key(
        judge=judge, evaluation=evaluation, grade_scale=scale.scale, template=template,
        provider_identity=provider.identity, keyword=snapshots[snapshot_id].keyword.text,
        fields=batch_claiming.document_fields(snapshots[snapshot_id]),
        image=snapshots[snapshot_id].image) for snapshot_id, _ in pairs}
    cached: set[str] = set()
    if not refresh_cache:
        wanted = sorted(set(keys.values()))
        for start in range(0, len(wanted), KEY_CHUNK):  # SQLite's bound on parameters
            cached.update(JudgeAnswer.objects.filter(
                key__in=wanted[start:start + KEY_CHUNK]).values_list("key", flat=True))
    asked = [(s, k) for s, k in pairs if keys[s] not in cached]
    run_batches = _batches_of(asked, judge.batch_size)
    tokens_out = tokens_out_expected(judge=judge)
    # The sample: the first batches, SAMPLE_PAIRS pairs at most, rendered as sent.
    sample, per_call, per_document = 0, [], []
    try:
        for batch in run_batches:
            batch = batch[:SAMPLE_PAIRS - sample]
            if not batch:
                break
            documents = batch_claiming.batch_documents([snapshots[s] for s in batch])
            prompt = build_prompt(template, keyword=snapshots[batch[0]].keyword.text,
                                  guidelines=evaluation.guidelines, documents=documents,
                                  scale=scale.scale)
            each = [text_tokens(render_documents([document])) for document in documents]
            per_call.append(prompt_tokens(prompt) - sum(each))
            per_document += each
            sample += len(batch)
    except PromptError as error:
        return RunEstimate(**empty, problem=f"the prompt cannot be rendered: {error}")
    call_count = len(run_batches)
    tokens_in = 0
    if sample:
        tokens_in = round(call_count * sum(per_call) / len(per_call)
                          + len(asked) * sum(per_document) / len(per_document))
    out = sum(tokens_out.for_call(len(batch)) for batch in run_batches)
    return RunEstimate(
        pair_count=len(pairs), cached_count=len(pairs) - len(asked), asked_count=len(asked),
        call_count=call_count, sampled_count=sample, tokens_in=tokens_in, tokens_out=out,
        tokens_out_source=tokens_out.source if call_count else "",
        cost=token_cost(judge=judge, tokens_in=tokens_in, tokens_out=out),
        currency=judge.price_currency)
