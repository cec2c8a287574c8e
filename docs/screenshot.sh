#!/usr/bin/env bash
# Regenerate the README's map pictures: the HTML map as headless Chromium shows it, and the static PNG.
set -euo pipefail
cd "$(dirname "$0")/.."
export ORT_DISABLE_TELEMETRY=1
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
assistant map "federated learning" --out "$tmp/map.html" >/dev/null
assistant map "federated learning" --out docs/map-federated-learning.png >/dev/null
chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
  --no-first-run --disable-sync --user-data-dir="$tmp/profile" --window-size=1600,1000 \
  --virtual-time-budget=10000 --screenshot=docs/map-html.png "file://$tmp/map.html" 2>/dev/null
echo "wrote docs/map-html.png and docs/map-federated-learning.png"
