"""Hostile input: the parsers never crash (other than the documented `ArticleError`) and stay fast.

- property tests (hypothesis) on the article parser (`.md` and `.txt` bytes), the scraped-page
  cleaner, the section parser and the error-signature extractor: arbitrary Unicode, NUL bytes,
  mixed encodings, Markdown-ish fragments nested deep, unbalanced fences;
- 1 MB adversarial inputs (one huge line, 5000 levels of `>` or `- `, runs of spaces after a
  heading, YAML bombs, a 1 MB table, ...): every call finishes within a time bound, which
  catches catastrophic regex backtracking (1000 spaces after `# a` once took 2.6 s, cubic);
- an ingest batch with binary, huge, invalid-UTF-8 and malicious files: each is reported
  with a reason and skipped, the good ones are indexed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import cli_env
from kb.config import MAX_ARTICLE_BYTES
from kb.errors import ArticleError
from kb.ingest import Document, parse_document, valid_article_id
from kb.parse import CAUSE, ERROR, FIX, OTHER, SUMMARY, SYMPTOM, parse_sections
from kb.scraped import CleanPage, clean_scraped_page
from kb.signature import TEXT_BUDGET, Signature, _extract, extract

KINDS = {SYMPTOM, ERROR, CAUSE, FIX, OTHER, SUMMARY}
MB = 1024 * 1024 - 64  # just under MAX_ARTICLE_BYTES, so parse_document parses rather than refuses
BASE_BOUND_S = 5.0

PROPS = settings(max_examples=60, deadline=None, database=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- strategies ---------------------------------------------------------------

FRAGMENTS = [
    "# Title", "## Root cause", "## 解决方法", "### Fix ###", "#", "#" * 7 + " x", "Heading\n=====", "---", "...",
    "```", "```python", "~~~", "````", "    indented code", "> quote", ">>>> deep", "- item", "* item", "1. item",
    "  - nested", "| a | b |", "|---|---|", "[link](javascript:alert(1))", "![img](x)", "<script>alert(1)</script>",
    "<!-- c", "**bold", "_it", "`code", "\\", "&#0;", "&amp;", "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "Traceback (most recent call last):", '  File "/usr/lib/python3/site-packages/torch/x.py", line 1, in f',
    "NCCL WARN Call to connect returned Connection refused", "[rank3]:[E ProcessGroupNCCL.cpp:616] Watchdog caught",
    "\x1b[31mERROR\x1b[0m", "显存不足怎么办", "登录后查看全文", "Python00", "1.2K", "id: x", "title: [unclosed",
    "tags: {a: b}", "a: &x [1]", "b: *x", "\x00", "\ufeff", "\r", "\u202e", "\U0001f600", "\udcff"[:0],
]


def _nest(prefix_and_text):
    prefix, depth, text = prefix_and_text
    return prefix * depth + text


markdownish_line = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.text(max_size=80),
    st.tuples(st.sampled_from(["> ", "- ", "  ", "* ", "1. ", ">", "#", "`"]), st.integers(0, 300),
              st.sampled_from(FRAGMENTS)).map(_nest),
)
markdownish = st.lists(markdownish_line, max_size=40).map("\n".join)
front_matter = st.tuples(st.lists(st.sampled_from(["id: a-b", "id: ../../etc/passwd", "title: T", "lang: zh", "tags: [x, y]",
                                                   "tags: 3", "source: http://x", "id: [", "- x", "a: &a [1]", "b: [*a]",
                                                   "id: \"\"", "lang: fr", "k: !!python/object:os.system x"]),
                                   max_size=6).map("\n".join), markdownish) \
    .map(lambda fm_body: f"---\n{fm_body[0]}\n---\n{fm_body[1]}")


@st.composite
def mixed_encoding_bytes(draw) -> bytes:
    """Pieces of text in different encodings glued together, as copy-paste from old pages gives."""
    parts = draw(st.lists(st.tuples(st.sampled_from(FRAGMENTS + ["显存", "é ü"]),
                                    st.sampled_from(["utf-8", "latin-1", "utf-16", "gbk", "utf-8-sig", "cp1252"])),
                          max_size=12))
    out = b""
    for text, enc in parts:
        out += text.encode(enc, "replace") + b"\n"
    return out


article_bytes = st.one_of(
    st.binary(max_size=2048),
    mixed_encoding_bytes(),
    markdownish.map(lambda s: s.encode("utf-8", "surrogatepass")),
    front_matter.map(lambda s: s.encode("utf-8", "surrogatepass")),
)
any_text = st.one_of(st.text(max_size=2000), markdownish, front_matter)


def _check_document(doc: Document, raw: bytes) -> None:
    assert isinstance(doc, Document)
    assert valid_article_id(doc.id)
    assert doc.lang in ("zh", "en")
    assert doc.body.strip() and isinstance(doc.title, str)
    assert all(isinstance(t, str) and t for t in doc.tags)
    assert len(doc.content_hash) == 64


# -- property tests -------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".md", ".txt"])
@PROPS
@given(raw=article_bytes)
def test_parse_document_only_raises_article_error(suffix, raw):
    try:
        doc = parse_document(raw, f"hostile{suffix}")
    except ArticleError as exc:
        assert exc.path == f"hostile{suffix}" and exc.reason
        return
    _check_document(doc, raw)


@PROPS
@given(text=any_text)
def test_clean_scraped_page_never_raises(text):
    page = clean_scraped_page(text)
    assert isinstance(page, CleanPage)
    assert isinstance(page.title, str) and isinstance(page.markdown, str)
    assert "\n" not in page.title


@PROPS
@given(text=any_text)
def test_parse_sections_never_raises(text):
    for s in parse_sections(text, title="Title"):
        assert s.kind in KINDS
        assert s.text.strip()
        assert all(isinstance(h, str) for h in s.heading_path)
        assert all(isinstance(c, str) for c in s.code_blocks)


@PROPS
@given(text=st.one_of(any_text, st.binary(max_size=2048)))
def test_signature_extract_never_raises(text):
    # `_extract` has no last-resort guard: a crash here would make `extract` silently return nothing
    sig = _extract(text)
    assert isinstance(sig, Signature)
    assert len(sig.text()) <= TEXT_BUDGET
    assert all(isinstance(line, str) and "\n" not in line for line in sig.lines)
    assert extract(text) == sig


# -- 1 MB adversarial inputs, with a time bound -----------------------------------

MD_ONLY = ("parse_document.md", "parse_document.txt")  # front matter: only the article parser reads it


def _cases() -> dict[str, tuple[str, tuple[str, ...] | None]]:
    """name -> (text, the functions to run it through; None: all)."""
    return {
        "spaces-after-heading": ("# a" + " " * MB + "b", None),
        "heading-spaces-then-hashes": ("# a" + " " * (MB // 2) + "#" * (MB // 2 - 8) + " b", None),
        "hashes": ("#" * MB, None),
        "backticks-one-line": ("`" * MB, None),
        "gt-5000-levels": ("\n".join([">" * 5000 + " deep"] + ["> " * i + "x" for i in range(0, 1000, 3)]), None),
        "list-5000-levels": ("- " * 5000 + "x\n" + "\n".join("  " * i + "- x" for i in range(900)), None),
        "mixed-nesting": (("> - 1. * " * 1200 + "x\n") * 20, None),
        "unbalanced-fences": (("```\n" * 3 + "~~~~\nx\n" * 5 + "````python\n") * 18000, None),
        "open-fence-to-eof": ("```python\n" + "x = 1  # 显存\n" * 65000, None),
        "brackets": ("[" * MB, None),
        "emphasis": ("*a _" * (MB // 4), None),
        "table-1mb": ("|a|b|\n|-|-|\n" + "|x|y|\n" * (MB // 6 - 2), None),
        # parse_sections only ever sees bodies with \r normalized away (parse_document does it)
        "nul-and-cr": ("\x00\r" * (MB // 2), MD_ONLY + ("clean_scraped_page", "signature.extract")),
        "traceback-13k-frames": ("Traceback (most recent call last):\n"
                                 + '  File "/opt/conda/lib/python3.11/site-packages/torch/nn/x.py", line 1, in f\n' * 13000
                                 + "RuntimeError: CUDA error: device-side assert triggered\n", None),
        "one-error-line-1mb": ("RuntimeError: " + "a " * (MB // 2 - 8), None),
        "cjk-one-line": ("显存不足导致训练失败" * (MB // 30), None),
        # an English segment in a Chinese line loses the quotes and brackets around it, layer by layer
        "cjk-nested-brackets": (("报错" + "(" * 900 + "x" + ")" * 900 + "了\n") * (MB // 1820), None),
        # a notebook's traceback header, then frame-like lines that never say where their path ends
        "notebook-frames": ("ValueError    Traceback (most recent call last)\n" + ("/a" * 500 + " in\n") * (MB // 1004), None),
        "rich-box": ("❱ " + ("│ " + "a" * 1000 + " in x\n") * (MB // 1010), None),
        "rich-one-line": ("╭─ " + "a/" * (MB // 2) + ".p", None),
        "ansi-codes": ("\x1b[31m[0;" * (MB // 9), None),
        "front-matter-unclosed": ("---\n" + "a: b\n" * (MB // 5), MD_ONLY),
        "front-matter-deep": ("---\nx: " + "[" * 200_000 + "\n---\nbody\n", MD_ONLY),
        "yaml-alias-bomb": ("---\n" + "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
                            + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9))
                            + "---\n# T\nbody\n", MD_ONLY),
    }


CASES = _cases()
FUNCTIONS = {
    "parse_document.md": lambda s: parse_document(s.encode("utf-8"), "hostile.md"),
    "parse_document.txt": lambda s: parse_document(s.encode("utf-8"), "hostile.txt"),
    "clean_scraped_page": clean_scraped_page,
    "parse_sections": parse_sections,
    "signature.extract": _extract,
}


class _Runaway(BaseException):
    pass


@contextmanager
def _watchdog(seconds: float):
    """Interrupt a runaway call (CPython's regex engine checks for signals) instead of hanging the suite."""
    def fire(signum, frame):
        raise _Runaway()

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def time_bound() -> float:
    """5 s, or 15x what this machine takes to parse an ordinary 1 MB article when it is slow or busy.

    Linear work stays within it (markdown-it's worst linear case, a 1 MB table, is ~7x the
    ordinary article: the margin absorbs load changing during the run); catastrophic
    backtracking overshoots it by orders of magnitude (1000 spaces after `# a` took 2.6 s).
    """
    section = ("## Error\n\n```text\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n```\n\n"
               "## Root cause\n\nThe batch does not fit. 显存不足, because activations grow with sequence length.\n\n"
               "## Fix\n\n- lower `per_device_train_batch_size`\n- enable gradient checkpointing\n\n")
    ordinary = "# Ordinary article\n\n" + section * (MB // len(section))
    runs = []
    for _ in range(2):
        started = time.perf_counter()
        parse_sections(ordinary)
        runs.append(time.perf_counter() - started)
    return max(BASE_BOUND_S, 15 * min(runs))


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_1mb_hostile_inputs_are_bounded(case, time_bound):
    text, only = CASES[case]
    assert len(text.encode("utf-8")) <= MAX_ARTICLE_BYTES, case
    slow = []
    for name, fn in FUNCTIONS.items():
        if only and name not in only:
            continue
        started = time.perf_counter()
        try:
            with _watchdog(3 * time_bound):
                fn(text)
        except ArticleError:
            pass
        except _Runaway:
            pytest.fail(f"{name} on {case!r} ran past {3 * time_bound:.0f}s (catastrophic backtracking?)")
        took = time.perf_counter() - started
        if took > time_bound:
            slow.append(f"{name}: {took:.1f}s")
    assert not slow, f"{case}: over {time_bound:.1f}s: {slow}"


def test_yaml_bombs_are_article_errors():
    with pytest.raises(ArticleError, match="aliases"):
        parse_document(CASES["yaml-alias-bomb"][0].encode(), "bomb.md")
    with pytest.raises(ArticleError, match="nested too deeply"):
        parse_document(CASES["front-matter-deep"][0].encode(), "deep.md")
    # unsafe YAML tags are refused too (safe loader), never executed
    with pytest.raises(ArticleError, match="front matter"):
        parse_document(b"---\nx: !!python/object/apply:os.system [echo pwned]\n---\nbody\n", "tag.md")


def test_heading_title_still_strips_closing_hashes():
    assert parse_document(b"# Fix NCCL hangs ##\n\nbody\n", "a.md").title == "Fix NCCL hangs"
    assert parse_document(b"# C#\n\nbody\n", "a.md").title == "C#"
    assert parse_document(b"#   \n\n## Real title\n\nbody\n", "a.md").title == "Real title"


def test_article_size_cap():
    at_limit = b"# Big\n\n" + b"a" * (MAX_ARTICLE_BYTES - 8) + b"\n"
    assert len(at_limit) == MAX_ARTICLE_BYTES
    assert parse_document(at_limit, "big.md").title == "Big"
    with pytest.raises(ArticleError, match=f"limit for one article is {MAX_ARTICLE_BYTES}"):
        parse_document(at_limit + b"a", "big.md")


# -- an ingest batch with hostile files ---------------------------------------------

GOOD = "---\nid: good-{n}\ntitle: Good {n}\n---\n\n## Error\n\nRuntimeError: good {n}\n\n## Fix\n\nDo thing {n}.\n"


def _hostile_batch(root):
    root.mkdir()
    for n in range(2):
        (root / f"good-{n}.md").write_text(GOOD.format(n=n))
    (root / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / "nul.txt").write_bytes(b"looks like text\x00but is not\n")
    (root / "latin1.md").write_bytes("# Caf\u00e9 cr\u00e8me\n\nr\u00e9sum\u00e9\n".encode("latin-1"))
    (root / "utf16.md").write_bytes("# UTF-16 article\n\nbody\n".encode("utf-16"))
    (root / "huge.md").write_bytes(b"# Huge\n\n" + b"x" * MAX_ARTICLE_BYTES)
    with open(root / "sparse-4gb.md", "wb") as f:  # never read into memory: refused by its size
        f.truncate(4 * 1024**3)
    (root / "bomb.md").write_text(CASES["yaml-alias-bomb"][0])
    (root / "deep.md").write_text(CASES["front-matter-deep"][0])
    (root / "escape.md").write_text("---\nid: ../../etc/passwd\n---\n\nbody\n")
    (root / "surrogate.md").write_text('---\nid: surrogate\ntitle: "bad \\ud800 title"\n---\n\nRuntimeError: x\n')
    expected = {"surrogate.md": "line 3: front matter holds a lone surrogate","binary.md": "binary", "nul.txt": "binary", "latin1.md": "UTF-8", "utf16.md": "binary",
                "huge.md": "limit", "sparse-4gb.md": "limit", "bomb.md": "aliases", "deep.md": "nested",
                "escape.md": "invalid id"}
    return expected


def test_hostile_files_in_a_batch_are_reported_and_skipped(settings, tokenizer, tmp_path):
    from kb.service import KnowledgeBase

    expected = _hostile_batch(tmp_path / "batch")
    base = KnowledgeBase(settings, tokenizer=tokenizer)
    started = time.perf_counter()
    report = base.ingest([tmp_path / "batch"])
    assert time.perf_counter() - started < 30
    assert sorted(report.added) == ["good-0", "good-1"]
    reasons = {e.path.rsplit("/", 1)[-1]: str(e) for e in report.failed}
    assert set(reasons) == set(expected), reasons
    for name, word in expected.items():
        assert word in reasons[name], (name, reasons[name])
    assert sorted(base.searcher().list_ids()) == ["good-0", "good-1"]
    assert not list((settings.data_dir / "snapshots").glob(".building-*"))


@pytest.mark.slow
def test_cli_reports_hostile_files_and_exits_1(tmp_path):
    expected = _hostile_batch(tmp_path / "batch")
    proc = subprocess.run([sys.executable, "-m", "kb_cli", "ingest", "-q", str(tmp_path / "batch")],
                          capture_output=True, text=True, env=cli_env(tmp_path / "data"), timeout=120)
    assert proc.returncode == 1, proc.stderr
    for name in expected:
        assert name in proc.stderr, (name, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert "2 added" in proc.stdout
