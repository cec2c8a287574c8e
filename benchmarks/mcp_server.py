"""`assistant mcp`: what starting it and asking it cost, as CPU seconds of the server process, in one run beside a
CLI `ask` of the same question. Offline (extractive), ASSISTANT_RERANK=off, the bundled 95 papers.

    python benchmarks/mcp_server.py [--questions 200] [--index-dir DIR]

Spawns the server, speaks JSON-RPC on its pipes (so the client costs nothing that is counted), and reads the
server's CPU time (/proc/PID/stat: user + system) and memory (/proc/PID/status: VmRSS, VmHWM) at each step:
- from spawn to its answer to ``initialize`` (the median of five spawns; answered before the MCP SDK is imported),
  and to its answer to ``tools/list``, which a client sends next (the SDK loaded by then);
- its first ``ask`` after that (the index opened, the models loaded), against one whole CLI ``ask`` process of the
  same question (its user + system time as a child);
- each further ``ask`` of a question it has not seen (``--questions`` of them, from the project's question files):
  p50 / p95 / max CPU, and the resident memory after 10 and after all of them.
Writes benchmarks/results/mcp_server.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
TICK = os.sysconf("SC_CLK_TCK")


def cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def memory(pid: int) -> dict:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {k: int(status[k].split()[0]) // 1024 for k in ("VmRSS", "VmHWM")}  # MB


def questions(n: int, first: str) -> list[str]:
    seen, out = {first}, []
    for path in sorted((HERE / "data").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            q = json.loads(line).get("question") if line.strip().startswith("{") else None
            if isinstance(q, str) and q not in seen:
                seen.add(q)
                out.append(q)
    return out[:n]


class Server:
    def __init__(self, index_dir: Path, env: dict):
        self.proc = subprocess.Popen([sys.executable, "-m", "assistant", "mcp", "--index-dir", str(index_dir)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env)
        self.next_id = 0

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.next_id:
                return reply

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def ask(self, question: str) -> dict:
        return self.request("tools/call", {"name": "ask", "arguments": {"question": question}})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--index-dir", type=Path)
    args = ap.parse_args()
    from mcp.types import LATEST_PROTOCOL_VERSION

    settings = bundled_index(args.index_dir)
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "ASSISTANT_RERANK": "off", "ASSISTANT_LLM": "off"}
    first = "What is Qronos?"
    # the CLI and the server each on a copy of the index as the ingest left it (its sentence vectors included, unless
    # ASSISTANT_SENTENCES=lazy built it): both meet the question for the first time
    work = Path(tempfile.mkdtemp())
    copies = []
    for name in ("cli", "server"):
        shutil.copytree(settings.index.dir, work / name)
        copies.append(work / name)

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "assistant", "ask", first, "--index-dir", str(copies[0])],
                   env=env, capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cli_ask = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    hello = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
             "clientInfo": {"name": "benchmark", "version": "0"}}
    starts, listed = [], []
    for _ in range(5):  # a start is short and the machine noisy: the median of five
        probe = Server(copies[1], env)
        probe.request("initialize", hello)
        starts.append(cpu(probe.proc.pid))
        probe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        probe.request("tools/list", {})
        listed.append(cpu(probe.proc.pid))
        probe.proc.stdin.close()
        probe.proc.wait(timeout=60)
    starts.sort()
    listed.sort()
    initialize = starts[2]
    server = Server(copies[1], env)
    pid = server.proc.pid
    server.request("initialize", hello)
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    server.request("tools/list", {})
    start = cpu(pid)
    reply = server.ask(first)
    assert reply["result"]["structuredContent"]["answerable"], reply
    first_ask = cpu(pid) - start
    costs, after_10, slowest, trace = [], None, [], {}
    started = time.perf_counter()
    for n, question in enumerate(questions(args.questions, first), 1):
        start = cpu(pid)
        reply = server.ask(question)
        assert "result" in reply, reply
        costs.append(cpu(pid) - start)
        slowest.append((round(costs[-1], 3), n, question[:70]))
        if n == 10:
            after_10 = memory(pid)
        if n % 50 == 0:
            trace[n] = memory(pid)["VmRSS"]
    after_all = memory(pid)
    server.proc.stdin.close()
    server.proc.wait(timeout=60)
    costs.sort()
    pick = lambda q: round(costs[min(len(costs) - 1, int(q * len(costs)))], 3)  # noqa: E731
    result = {"initialize_cpu_s": round(initialize, 3), "initialize_cpu_s_of_5": [round(x, 3) for x in starts],
              "tools_list_cpu_s": round(listed[2], 3), "tools_list_cpu_s_of_5": [round(x, 3) for x in listed],
              "first_ask_cpu_s": round(first_ask, 3),
              "cli_ask_cpu_s": round(cli_ask, 3), "further_asks": len(costs),
              "further_ask_cpu_s": {"p50": pick(0.5), "p95": pick(0.95), "max": round(costs[-1], 3)},
              "memory_mb_after_10": after_10, "memory_mb_after_all": after_all, "rss_mb_every_50": trace,
              "slowest": sorted(slowest, reverse=True)[:8],
              "wall_s": round(time.perf_counter() - started, 1)}
    shutil.rmtree(work, ignore_errors=True)
    out = HERE / "results" / "mcp_server.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
