"""Evaluation: question files over the index (the ``dev.jsonl`` format) and BEIR datasets.

Question types: ``lookup``, ``paraphrase``, ``fact``, ``named`` (the question names its paper) and ``followup``
have one gold paper
(scored with R@1, R@5, MRR; ``followup`` items have ``turns`` and are run as a conversation,
scored on the last turn); ``area`` has several (nDCG@10); ``none`` has none (the gate must refuse).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from assistant.config import Settings
from assistant.errors import InputError

SINGLE_GOLD = ("lookup", "paraphrase", "fact", "named", "followup")
TYPES = (*SINGLE_GOLD, "area", "none")


# --- metrics (pure functions, tested on hand-made cases) ---------------------------------------


def reciprocal_rank(ranked: list[str], gold: set[str], cutoff: int | None = None) -> float:
    for i, pid in enumerate(ranked[:cutoff] if cutoff else ranked, 1):
        if pid in gold:
            return 1.0 / i
    return 0.0


def recall_at(ranked: list[str], gold: set[str], k: int) -> float:
    if not gold:
        return 0.0
    return len(set(ranked[:k]) & gold) / len(gold)


def ndcg_at(ranked: list[str], gold: set[str] | dict[str, float], k: int = 10) -> float:
    """Binary (set) or graded (dict) relevance nDCG@k."""
    gains = gold if isinstance(gold, dict) else {g: 1.0 for g in gold}
    dcg = sum(gains.get(pid, 0.0) / math.log2(i + 1) for i, pid in enumerate(ranked[:k], 1))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
    return dcg / idcg if idcg > 0 else 0.0


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


# --- question files ---------------------------------------------------------------------------


def _check_question(item, where: str) -> None:
    """A question record's fields of the type eval reads them as (a number as the question was a traceback; a string
    as 'answer_facts' was read letter by letter, scoring 1.0)."""
    if not isinstance(item, dict):
        raise InputError(f"{where}: not a JSON object (a question file holds one object per line, not an array)")
    if "question" in item and not isinstance(item["question"], str):
        raise InputError(f"{where}: 'question' must be text")
    for name in ("turns", "answer_facts"):
        value = item.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise InputError(f"{where}: '{name}' must be a list of strings")


def load_questions(path: Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such question file: {path}")
    items = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text (byte {exc.start}); a question file is JSON Lines") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: malformed JSON ({exc.msg}); one JSON object per line") from None
        _check_question(item, f"{path}:{lineno}")
        if item.get("type") not in TYPES:
            raise InputError(f"{path}:{lineno}: unknown type {item.get('type')!r}; expected one of {', '.join(TYPES)}")
        if not (item.get("question") or item.get("turns")):
            raise InputError(f"{path}:{lineno}: needs 'question' or 'turns'")
        gold = item.get("gold", [])
        if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
            raise InputError(f"{path}:{lineno}: 'gold' must be a list of paper ids")
        if item["type"] != "none" and not gold:
            raise InputError(f"{path}:{lineno}: a {item['type']} question needs its gold paper ids in 'gold'")
        item.setdefault("id", f"{path.stem}:{lineno}")  # the --json rows and the table name each question
        item["_line"] = f"{path}:{lineno}"
        items.append(item)
    if not items:
        raise InputError(f"{path} holds no questions; one JSON object per line, e.g. "
                         '{"type": "lookup", "question": "What is Qronos?", "gold": ["<paper id>"]}')
    return items


@dataclass
class EvalReport:
    rows: list[dict] = field(default_factory=list)

    def summary(self) -> dict:
        single = [r for r in self.rows if r["type"] in SINGLE_GOLD]
        area = [r for r in self.rows if r["type"] == "area"]
        none = [r for r in self.rows if r["type"] == "none"]
        answerable = [r for r in self.rows if r["type"] != "none"]
        with_facts = [r for r in self.rows if r.get("_facts")]
        out = {
            "questions": len(self.rows),
            "single_gold": len(single),
            "R@1": _mean([r["_rr"] == 1.0 for r in single]),
            "R@5": _mean([r["_r5"] for r in single]),
            "MRR": _mean([r["_rr"] for r in single]),
            "area_nDCG@10": _mean([r["_ndcg"] for r in area]),
            "none_accuracy": _mean([not r["answerable"] for r in none]),
            "false_refusal_rate": _mean([not r["answerable"] for r in answerable]),
            "first_citation_gold": _mean([bool(r["citations"]) and r["citations"][0] in r["_gold"] for r in single]),
            "answer_fact_coverage": _mean([r["_facts_ok"] for r in with_facts]),
            # of the answered questions, the share marked unsure (the answer says the corpus may lack the topic)
            "unsure_absent_answered": _mean([r["unsure"] for r in none if r["answerable"]]),
            "unsure_answerable_answered": _mean([r["unsure"] for r in answerable if r["answerable"]]),
        }
        by_type = {}
        for t in TYPES:
            rs = [r for r in self.rows if r["type"] == t]
            if rs and t in SINGLE_GOLD:
                by_type[t] = {"n": len(rs), "R@1": _mean([r["_rr"] == 1.0 for r in rs]),
                              "R@5": _mean([r["_r5"] for r in rs]), "MRR": _mean([r["_rr"] for r in rs])}
        out["by_type"] = by_type
        return out


def public_row(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith("_")}


def evaluate_questions(items: list[dict], settings: Settings, on_row: Callable[[dict], None] | None = None,
                       progress=None, on_question: Callable[[int, int], None] | None = None) -> EvalReport:
    """Run every question through the same code path as ``chat`` and score it. ``progress``: of a first-run
    index build; ``on_question(done, total)``: after each question (re-ranked ones take ~8 s)."""
    from assistant.service.api import conversation

    conv = conversation(settings, progress=progress)
    held = set(conv.retriever.papers())
    unknown = next(((item, g) for item in items for g in item.get("gold") or [] if g not in held), None)
    if unknown is not None:  # a typo would be scored as a miss, every figure quietly lower
        item, gold = unknown
        raise InputError(f"{item.get('_line', item.get('id'))}: gold paper {gold!r} is not in the index; list the "
                         "ids with: assistant papers")
    report = EvalReport()
    for done, item in enumerate(items, 1):
        answer = conv.ask(conv.replay(item))
        gold = set(item.get("gold") or [])
        ranked = [h.paper_id for h in answer.retrieved]
        facts = item.get("answer_facts") or []
        row = {
            "id": item.get("id"), "type": item["type"], "hits": ranked, "answerable": answer.answerable,
            "unsure": answer.unsure,
            "answer": answer.text, "citations": [c.paper_id for c in answer.citations],
            "_gold": gold, "_rr": reciprocal_rank(ranked, gold), "_r5": recall_at(ranked, gold, 5) if gold else 0.0,
            "_ndcg": ndcg_at(ranked, gold, 10) if gold else 0.0, "_facts": facts,
            "_facts_ok": all(f.lower() in answer.text.lower() for f in facts) if facts else None,
        }
        report.rows.append(row)
        if on_row:
            on_row(row)
        if on_question:
            on_question(done, len(items))
    return report


# --- BEIR ---------------------------------------------------------------------------------------


def load_beir(directory: Path) -> tuple[list[dict], dict[str, str], dict[str, dict[str, float]]]:
    """(corpus records, queries id->text, qrels query->doc->grade) from a BEIR folder."""
    directory = Path(directory)
    needed = ["corpus.jsonl", "queries.jsonl"]
    for name in needed:
        if not (directory / name).is_file():
            raise InputError(f"{directory} is not a BEIR folder: {name} is missing")
    qrels_path = next((directory / n for n in ("qrels_test.tsv", "qrels/test.tsv") if (directory / n).is_file()), None)
    if qrels_path is None:
        raise InputError(f"{directory} has no qrels_test.tsv (or qrels/test.tsv)")
    corpus = [json.loads(line) for line in (directory / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = {}
    for line in (directory / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            queries[str(q["_id"])] = q["text"]
    qrels: dict[str, dict[str, float]] = {}
    for i, line in enumerate(qrels_path.read_text().splitlines()):
        parts = line.split("\t")
        if i == 0 and not parts[-1].strip().lstrip("-").isdigit():
            continue  # header
        if len(parts) >= 3 and float(parts[2]) > 0:
            qrels.setdefault(parts[0], {})[parts[1]] = float(parts[2])
    return corpus, queries, qrels


def beir_papers(corpus: list[dict]):
    from assistant.text.corpus import Paper
    from assistant.text.titles import normalise_space

    out = []
    for i, rec in enumerate(corpus, 1):
        title = normalise_space(rec.get("title") or "")
        out.append(Paper(id=str(rec["_id"]), title=title or normalise_space(rec["text"])[:90],
                         abstract=normalise_space(rec["text"]) or title, source="corpus.jsonl", position=i,
                         title_derived=not title))
    return out


def _refuse_another_corpus(settings: Settings, ids: set[str], directory: Path) -> None:
    """A BEIR corpus is indexed in an index of its own: one holding any other paper (a user's index) is refused
    before anything is written, since the corpus would be mixed into it (and replace a paper sharing an id)."""
    from assistant.store.index import Index
    from assistant.store.integrity import NoIndex

    try:
        held = Index(settings).all_papers()
    except NoIndex:
        return
    others = [pid for pid in held if pid not in ids]
    if others:
        name = Path(directory).resolve().name
        raise InputError(f"{settings.index.dir} holds another corpus ({len(held)} papers, {len(others)} not in "
                         f"{name}/corpus.jsonl) and eval --beir would index {name} into it: name an empty or new "
                         f"--index-dir, or leave --index-dir out (it uses index_store/beir/{name})")


def evaluate_beir(directory: Path, settings: Settings, k: int = 100, on_row: Callable[[dict], None] | None = None,
                  progress=None, on_question: Callable[[int, int], None] | None = None) -> dict:
    """Index a BEIR corpus (reused when already indexed) and score its test queries. ``progress``: of the
    indexing; ``on_question(done, total)``: after each query."""
    from assistant.store.index import Index
    from assistant.store.ingest import ingest
    from assistant.search.retrieve import Retriever

    corpus, queries, qrels = load_beir(directory)
    papers = beir_papers(corpus)
    _refuse_another_corpus(settings, {p.id for p in papers}, directory)
    ingest(papers, settings, progress=progress)
    retriever = Retriever(Index(settings), settings)
    ndcg, recall, mrr = [], [], []
    asked = [qid for qid in sorted(qrels, key=lambda x: (len(x), x)) if qid in queries]
    for qid in asked:
        found = retriever.search(queries[qid], k=k, candidates=max(k, 100), rerank=True)
        ranked = [h.paper_id for h in found.hits]
        gold = qrels[qid]
        ndcg.append(ndcg_at(ranked, gold, 10))
        recall.append(recall_at(ranked, set(gold), k))
        mrr.append(reciprocal_rank(ranked, set(gold), cutoff=10))
        if on_row:
            on_row({"id": qid, "hits": ranked})
        if on_question:
            on_question(len(ndcg), len(asked))
    return {"queries": len(ndcg), "nDCG@10": _mean(ndcg), f"R@{k}": _mean(recall), "MRR@10": _mean(mrr)}
