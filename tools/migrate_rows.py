"""Move the rows of a results.csv to the current key format, only where it is proven that nothing that runs changed.

    python tools/migrate_rows.py reports/h100/results.csv --commit d0ca9bc

A row carries its implementation's code key as computed at the commit that measured it (`--commit`).  When the
key *function* changes (study/measure/evidence.py), every row turns stale although no kernel did.  This tool proves,
per implementation, that it did not, and only then rewrites the row's key:

1. the commit's tree, exported to a temporary folder, computes its own code keys: each row's `impl_key` must
   equal its implementation's (the rows are what that commit measured);
2. the same tree, with the current study/measure/evidence.py (and the modules it uses) copied in, computes code keys
   with the current function: where one equals the current tree's, the compiled code, host code, launch
   declaration and launch code, labels and target of that implementation are the same at both commits, and its
   rows get the current key.  Every other row is left as it is (stale).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEY_MODULES = ("study/measure/evidence.py", "study/measure/offline.py", "study/launch/cubin_key.py")


def code_keys(tree: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", "import json; from study.measure import evidence as e; k = e.Keys(); "
                          "print(json.dumps({i.name: k.code_key(i.name) for i in k.impls}))"],
                         cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", type=Path)
    ap.add_argument("--commit", required=True, help="the commit that measured the rows")
    args = ap.parse_args()
    rows = list(csv.DictReader(open(args.csv)))
    assert {r["commit"] for r in rows} == {args.commit}, "every row must come from --commit"
    now = code_keys(ROOT)
    with tempfile.TemporaryDirectory() as d:
        old = Path(d)
        blob = subprocess.run(["git", "archive", args.commit], cwd=ROOT, capture_output=True, check=True).stdout
        tarfile.open(fileobj=io.BytesIO(blob)).extractall(old)
        then = code_keys(old)
        forged = [r for r in rows if r["impl_key"] != then.get(r["impl"])]
        assert not forged, f"{len(forged)} rows do not carry {args.commit}'s own keys, e.g. {forged[0]['impl']}"
        # The current key function, and any module of study/ it may import that the old tree does not have yet.
        added = [p.relative_to(ROOT) for p in (ROOT / "study").rglob("*.py") if not (old / p.relative_to(ROOT)).exists()]
        for m in (*KEY_MODULES, *added):
            (old / m).parent.mkdir(parents=True, exist_ok=True)
            (old / m).write_text((ROOT / m).read_text())
        then_now = code_keys(old)
    same = {n for n in now if then_now.get(n) == now[n]}
    for r in rows:
        if r["impl"] in same:
            r["impl_key"] = now[r["impl"]]
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    moved = sum(r["impl"] in same for r in rows)
    print(f"{args.csv}: {moved} of {len(rows)} rows moved to the current key; "
          f"implementations whose code differs: {sorted(set(now) - same) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
