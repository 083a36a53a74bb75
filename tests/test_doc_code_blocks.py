"""Every Python code block of the documentation runs.

The pages are docs/*.md and README.md. The ```python blocks of one page run in order in one
namespace (later blocks use the names earlier ones defined, as a reader would type them), in
a fresh temporary working directory, with matplotlib's non-interactive Agg backend.

A block that cannot run (a fragment, or one that needs a network or a cluster) starts with
the marker ``# not run: <reason>``; the reason is required, so a skipped block always says
why. Every fence must name its language, so a Python block cannot escape this test by
leaving the language out.
"""

import re
import traceback
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
PYTHON_LANGUAGES = {"python", "py", "python3"}
# The marker, and the minimum length of its reason: one or two words are not a reason.
NOT_RUN = re.compile(r"#\s*not[ _-]?run\b(?P<colon>:?)(?P<reason>.*)", re.IGNORECASE)
MIN_REASON_CHARS = 10
# An opening or closing fence, possibly indented (a block inside a list item).
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def _blocks(path):
    """The fenced code blocks of a Markdown page: ``(line, language, source)`` each.

    ``line`` is the 1-based line of the opening fence. The source is dedented by the fence's
    indentation. A fence closes on a line of the same character, at least as long, and
    nothing else (CommonMark's rule, so a ```` fence may contain ``` lines).
    """
    blocks = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        words = opening["info"].split()
        language = words[0] if words else ""
        if language in ("{code-block}", "{code}", "{sourcecode}"):
            # MyST's directive form: the language is the argument.
            language = words[1] if len(words) > 1 else ""
        body = []
        j = i + 1
        while j < len(lines):
            closing = FENCE.match(lines[j])
            if (closing is not None and closing["fence"][0] == fence[0]
                    and len(closing["fence"]) >= len(fence) and not closing["info"].strip()):
                break
            line = lines[j]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            j += 1
        blocks.append((i + 1, language, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def _python_blocks(path):
    return [(line, source) for line, language, source in _blocks(path)
            if language.lower() in PYTHON_LANGUAGES]


def _marker(source):
    """The ``# not run`` match on the block's first non-blank line, or None."""
    for line in source.splitlines():
        if line.strip():
            return NOT_RUN.match(line.strip())
    return None


def _page_id(path):
    return path.relative_to(ROOT).as_posix()


def test_pages_are_found():
    # Guards against a glob that silently matches nothing (a moved docs folder).
    assert len(PAGES) > 10
    assert sum(len(_python_blocks(page)) for page in PAGES) > 20


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_fence_names_its_language(page):
    unnamed = [line for line, language, _ in _blocks(page) if not language]
    assert not unnamed, (
        f"{_page_id(page)}: fenced blocks without a language at lines {unnamed}; name it "
        "(python, bash, text, ...) so Python blocks are all tested")


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_not_run_markers_give_a_reason(page):
    bad = []
    for line, source in _python_blocks(page):
        marker = _marker(source)
        if marker is None:
            # A marker further down the block would be ignored: say so rather than run it.
            if any(NOT_RUN.match(text.strip()) for text in source.splitlines()):
                bad.append(f"line {line}: the '# not run:' marker must be the first line")
            continue
        reason = marker["reason"].strip()
        if not marker["colon"] or len(reason) < MIN_REASON_CHARS:
            bad.append(f"line {line}: write '# not run: <reason>' with a reason "
                       f"(at least {MIN_REASON_CHARS} characters), got {marker.group(0)!r}")
    assert not bad, f"{_page_id(page)}:\n" + "\n".join(bad)


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page_code_blocks_run(page, tmp_path, monkeypatch):
    runnable = [(line, source) for line, source in _python_blocks(page)
                if _marker(source) is None]
    if not runnable:
        pytest.skip(f"{_page_id(page)} has no runnable Python block")
    # Agg before pyplot is imported anywhere; the blocks write their files into tmp_path.
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    import matplotlib  # in the dev extra: a missing matplotlib must fail, not skip the docs

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import sklearn_ldp

    # Blocks may change the process-wide size caps; later pages and tests must not inherit them.
    saved_limits = sklearn_ldp.get_limits()
    namespace = {"__name__": "__main__"}
    try:
        # The blocks' matrices are small: one BLAS thread avoids oversubscribing a shared CI
        # machine (several times faster under load; see docs/conf.py).
        with threadpool_limits(limits=1):
            for line, source in runnable:
                # The file name points a traceback at the page and the fence's line.
                code = compile(source, f"{_page_id(page)}, block at line {line}", "exec")
                try:
                    exec(code, namespace)  # noqa: S102 - running the documentation is the test
                except Exception:
                    pytest.fail(f"{_page_id(page)}: the block at line {line} failed:\n"
                                f"{traceback.format_exc()}", pytrace=False)
    finally:
        plt.close("all")
        sklearn_ldp.set_limits(**saved_limits)


# ---------------------------------------------------------------------- what the pages say
README_MAX_LINES = 150
# Development history in a user page: the pages state what holds and how to reproduce it.
# Narrow phrases, so that ordinary prose ("a key used to sign") does not match.
HISTORY = re.compile(
    r"\bissue\s+\d+|\b(?:the|this)\s+issue's\b|\bused to (?:be|come|take|give|have|return)\b"
    r"|\bpreviously\b|\ban earlier (?:run|version|release)\b|\bmeasured again\b"
    r"|\bdeprecated\b|\bnot \(?yet\)? offered\b|\bwent from\b", re.IGNORECASE)


def test_readme_is_short_and_holds_the_three_setup_commands():
    # .ci/run runs the first three ```bash blocks, in this order: quick start, tests, docs.
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    bash = [source for _, language, source in _blocks(ROOT / "README.md") if language == "bash"]
    assert len(bash) >= 3
    assert '".[examples]"' in bash[0] and "examples/quickstart.py" in bash[0]
    assert '".[dev]"' in bash[1] and "pytest" in bash[1]
    assert '".[docs]"' in bash[2] and "sphinx" in bash[2]


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_pages_state_results_not_history(page):
    found = [(number, match.group(0)) for number, text in
             enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
             for match in HISTORY.finditer(text)]
    assert not found, f"{_page_id(page)}: development history at (line, phrase) {found}"
