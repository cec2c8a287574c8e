"""Does the embedder say which words of a question carry its topic? A feasibility measurement, no behaviour change.

    python benchmarks/topicality.py

For each word of each question of the tuned files (benchmarks/data/*.jsonl and the shared dev set; not the held-out
ones), its *drop*: 1 - cos(question, question without the word), MiniLM vectors. The fitted framing terms
(assistant/data/decisions.json, learned from the same files: words in many questions but rarely in their gold
papers) label a word framing; every other word with letters is counted topical. Reports the AUC of the drop for
telling them apart, and the drop of the words that make casual questions refused ("papers re LoRA", "dataset
distillation, pls", "anything on X?"), which no fitted list has. Writes benchmarks/results/topicality.json.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
sys.path.insert(0, str(HERE.parent))

CASUAL = ["papers re LoRA", "dataset distillation, pls", "anything on prompt injection?",
          "What's in the corpus on federated learning?", "is catastrophic forgetting covered here?",
          "deep research agents, anything in here", "speculative decoding for LLMs",
          "membership inference attacks on diffusion models"]


def drops(embed, question: str) -> list[tuple[str, float]]:
    words = re.findall(r"\S+", question)
    if len(words) < 2:
        return []
    import numpy as np

    whole = embed([question])[0]
    cut = embed([" ".join(words[:i] + words[i + 1:]) for i in range(len(words))])
    return [(w, float(1.0 - cut[i] @ whole)) for i, w in enumerate(words) if np.isfinite(cut[i]).all()]


def auc(pos: list[float], neg: list[float]) -> float:
    """P(a framing word's drop < a topical word's drop), ties half."""
    import numpy as np

    p, n = np.array(pos), np.sort(np.array(neg))
    lower = np.searchsorted(n, p, side="left")
    upper = np.searchsorted(n, p, side="right")
    return float(((len(n) - upper) + 0.5 * (upper - lower)).sum() / (len(p) * len(n)))


def main() -> int:
    from assistant.embed.embedder import OnnxMiniLM
    from assistant.search.decide import framing_terms, terms

    model = OnnxMiniLM()

    def embed(texts):
        return model.embed(texts, 32)

    framing = framing_terms()
    files = [SHARED / "eval" / "dev.jsonl"] + sorted((HERE / "data").glob("*.jsonl"))
    frame_drops, topic_drops = [], []
    for path in files:
        for line in path.read_text().splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            q = item.get("question")
            if not isinstance(q, str):
                continue
            for word, d in drops(embed, q):
                stems = terms(word)
                if not stems:
                    continue  # stop words: BM25 drops them already
                (frame_drops if stems <= framing else topic_drops).append(d)
    import numpy as np

    result = {"questions_files": [p.name for p in files], "framing_words": len(frame_drops),
              "topical_words": len(topic_drops), "auc_framing_lower": round(auc(frame_drops, topic_drops), 4),
              "median_drop_framing": round(float(np.median(frame_drops)), 4),
              "median_drop_topical": round(float(np.median(topic_drops)), 4),
              "casual": {q: [(w, round(d, 4)) for w, d in drops(embed, q) if terms(w)] for q in CASUAL}}
    (HERE / "results" / "topicality.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "questions_files"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
