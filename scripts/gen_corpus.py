"""Generate a large corpus for benchmarks: N articles built from the bundled ones.

    .venv/bin/python scripts/gen_corpus.py OUT_DIR [--n 10000] [--seed 7]

Each generated article is a bundled article (same title, sections and error blocks, as a
knowledge base full of similar incident reports would be) plus one "Incident note"
section of its own with random words, hosts and numbers. Chunk text shared with the
bundled article hits the embedding cache, so only the note is encoded: a 10k corpus
indexes in minutes with the real model, while search runs over the full 10k.
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

import yaml

from kb.ingest import find_article_files, load_document
from kb.text import HAN

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    bases = [load_document(p) for p in find_article_files([REPO / "corpus"])]
    vocab = sorted({w for d in bases for w in re.findall(f"[A-Za-z_]{{4,}}|[{HAN}]{{2,4}}", d.body)})
    args.out.mkdir(parents=True, exist_ok=True)
    for i in range(args.n):
        base = bases[i % len(bases)]
        words = " ".join(rng.choice(vocab) for _ in range(rng.randint(25, 60)))
        note = (
            f"Seen on node-{rng.randint(1, 400)}.cluster.local, job {rng.randint(10**5, 10**6)}, "
            f"step {rng.randint(1, 90_000)}, {rng.randint(1, 80)} GPUs. {words}"
        )
        front = {"id": f"gen-{i:05d}-{base.id}"[:128], "title": base.title, "lang": base.lang, "tags": list(base.tags)}
        text = f"---\n{yaml.safe_dump(front, allow_unicode=True, sort_keys=False)}---\n\n{base.body.rstrip()}\n\n## Incident note\n\n{note}\n"
        (args.out / f"{front['id']}.md").write_text(text, encoding="utf-8")
    print(f"wrote {args.n} articles to {args.out}")


if __name__ == "__main__":
    main()
