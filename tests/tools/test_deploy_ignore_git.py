"""Exclude patterns checked against git itself: ``git check-ignore`` in a real repository is the oracle."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from studio.core.errors import UserError
from studio.targets.transfer.ignore import Excludes

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

# (patterns, path, is_dir): each path is created (as a folder when is_dir) and asked of git.
CASES = [
    (["*.log", "!keep.log"], "x.log", False),
    (["*.log", "!keep.log"], "a/keep.log", False),
    (["logs/", "!logs/keep.log"], "logs/keep.log", False),   # git never looks inside an excluded folder
    (["dir", "!dir/keep"], "dir/keep", False),
    (["*.log", "!important/*.log", "important/"], "important/a.log", False),
    (["*", "!keep"], "keep/x", False),                       # "!keep" re-includes the folder, not its files
    (["*", "!keep"], "keep", True),
    (["/*", "!/foo", "/foo/*", "!/foo/bar"], "foo/bar/x", False),
    (["/*", "!/foo", "/foo/*", "!/foo/bar"], "foo/baz/x", False),
    (["**/foo"], "foo", False),
    (["**/foo"], "a/b/foo", False),
    (["**/foo/bar"], "a/foo/bar", False),
    (["foo/**"], "foo", True),
    (["foo/**"], "foo/a/b", False),
    (["a/**/b"], "a/b", False),
    (["a/**/b"], "a/x/y/b", False),
    (["a/**/"], "a/f", False),                               # folders inside a, not its files
    (["a/**/"], "a/x/f", False),
    (["a/**/"], "a", True),
    (["**/"], "f", False),
    (["**/"], "d/f", False),
    (["build/"], "build", False),
    (["build/"], "build", True),
    (["build/"], "a/build/x", False),
    (["/a/b/"], "x/a/b/c", False),
    (["/a/b/"], "a/b/c", False),
    (["/x"], "a/x", False),
    (["/x"], "x/y", False),
    (["a/*"], "a/b/c", False),
    (["\\#hash"], "#hash", False),
    (["#hash"], "#hash", False),
    (["\\!bang"], "!bang", False),
    (["!"], "!", False),
    (["foo\\ "], "foo ", False),
    (["foo  "], "foo", False),
    (["a\\\\ "], "a\\", False),                              # the space after an escaped backslash goes
    (["a\\\\ "], "a\\ ", False),
    (["[!a]x"], "bx", False),
    (["[]]x"], "]x", False),
    (["\\*x"], "ax", False),
    (["\\[x\\]"], "[x]", False),                             # escaped brackets are no class
    (["[]a]x"], "ax", False),
    (["a**b"], "a/b", False),
]


def _git_ignores(repo, patterns: list[str], path: str, is_dir: bool) -> bool:
    (repo / ".gitignore").write_text("\n".join(patterns) + "\n")
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if is_dir:
        target.mkdir()
    else:
        target.write_text("")
    done = subprocess.run(["git", "-C", str(repo), "check-ignore", "-q", "--no-index", path])
    assert done.returncode in (0, 1), done
    return done.returncode == 0


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    return tmp_path / "repo"


@pytest.mark.parametrize("patterns, path, is_dir", CASES)
def test_excludes_agree_with_git(repo, patterns, path, is_dir):
    expected = _git_ignores(repo, patterns, path, is_dir)
    assert Excludes(patterns).excluded(path, is_dir) is expected, f"git check-ignore says {expected}"


# Patterns git accepts but never lets match (or reads another way than it looks): refused with a
# message rather than kept as a rule that silently does something else.
REFUSED = [
    "a[/]b",          # a [...] class never matches "/"
    "x[",             # an unclosed class matches nothing
    "x[ab",
    "a\\",            # a lone trailing backslash
    "[[:digit:]]x",   # POSIX classes
    "[a\\]]x",        # an escape inside a class
]


@pytest.mark.parametrize("pattern", REFUSED)
def test_patterns_that_would_not_do_what_they_say_are_refused(pattern):
    with pytest.raises(UserError) as caught:
        Excludes([pattern])
    assert repr(pattern) in caught.value.what and caught.value.where == "--exclude"
