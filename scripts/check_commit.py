#!/usr/bin/python3
"""Commit messages as the project writes them: a subject of about 50 characters, 72 at most, and the detail in a
body after a blank line (docs/contributing.md).

    check_commit.py               the commits since the merge-base with main (on main itself, the last commit and
                                  what it merged): what to run before handing a branch over
    check_commit.py --base REF    the commits since REF
    check_commit.py FILE          one message in a file, as git hands it to a commit-msg hook (lines starting
                                  with '#' are git's comments); install the hook of a clone with
                                  ln -sf "$PWD/scripts/check_commit.py" "$(git rev-parse --git-common-dir)/hooks/commit-msg"
    check_commit.py --self-test   generated messages against the rules (a CTest test, well under a second)

A subject over 72 characters (counted in characters, not bytes), an empty subject, or a body that does not start
after one blank line fails with one line naming the commit; a subject over 50 characters only gets a note. Exit 1
on a failure, 0 otherwise.
"""
import random
import subprocess
import sys

LIMIT, PREFERRED = 72, 50


def problems(message):
    """The rules' findings for one message: (failures, notes), each a list of strings."""
    lines = [line.rstrip() for line in message.split("\n") if not line.startswith("#")]
    while lines and not lines[0]:
        lines.pop(0)
    if not lines:
        return ["the message is empty"], []
    subject, failures, notes = lines[0], [], []
    if len(subject) > LIMIT:
        failures.append(f"the subject is {len(subject)} characters, more than {LIMIT}: '{subject}'")
    elif len(subject) > PREFERRED:
        notes.append(f"the subject is {len(subject)} characters; about {PREFERRED} reads best: '{subject}'")
    if len(lines) > 1 and lines[1]:
        failures.append("the body starts on line 2: leave line 2 blank, so that the subject stands alone")
    return failures, notes


def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def commit_range(base):
    if base is None:
        try:
            base = git("merge-base", "main", "HEAD").strip()
        except subprocess.CalledProcessError:
            base = ""
        if not base or base == git("rev-parse", "HEAD").strip():
            base = "HEAD~1"  # on main: the last commit, and what it merged
    return f"{base}..HEAD"


def check_commits(base):
    try:
        hashes = git("rev-list", commit_range(base)).split()
    except subprocess.CalledProcessError as e:
        sys.exit(f"check_commit: git rev-list failed: {e.stderr.strip()}")
    failed = 0
    for h in hashes:
        failures, notes = problems(git("log", "-1", "--format=%B", h))
        for text in failures:
            print(f"FAIL {h[:7]}: {text}")
        for text in notes:
            print(f"note {h[:7]}: {text}")
        failed += bool(failures)
    since = commit_range(base).split("..")[0]
    since = since[:7] if len(since) == 40 else since
    print(f"check_commit: {len(hashes) - failed} of {len(hashes)} commits since {since} follow the rules")
    return 1 if failed else 0


def check_file(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        failures, notes = problems(f.read())
    for text in notes:
        print(f"check_commit: note: {text}", file=sys.stderr)
    for text in failures:
        print(f"check_commit: {text} (the message is kept in {path})", file=sys.stderr)
    return 1 if failures else 0


def self_test():
    """Subjects of every length from 1 to 100 characters, of ASCII and of multibyte characters, with and without a
    body, behind git's comment lines: each must pass exactly when its subject is at most 72 characters and its body
    starts after a blank line."""
    rng = random.Random(48)
    alphabet = "abcdefghijklmnopqrstuvwxyz ABC:/.-_()0123456789" + "éß☃𝄞"
    cases = bad = 0
    for n in range(1, 101):
        subject = rng.choice("abcXYZé") + "".join(rng.choice(alphabet) for _ in range(n - 1))
        subject = subject[:-1] + "x"  # no trailing space: it would be stripped
        for body, body_ok in (("", True), ("\n\nWhy, in detail.\n", True), ("\nWhy, in detail.\n", False)):
            for comments in ("", "# Please enter the commit message\n#\n"):
                failures, _ = problems(comments + subject + body + "\n" + comments)
                expected = n <= LIMIT and body_ok
                cases += 1
                if (not failures) != expected:
                    bad += 1
                    print(f"FAIL: a {n}-character subject, body {body!r}: {failures or 'passed'}")
    for message in ("", "\n\n", "# only a comment\n"):
        cases += 1
        if problems(message)[0] != ["the message is empty"]:
            bad += 1
            print(f"FAIL: {message!r} is not refused as empty")
    print(f"check_commit: {cases - bad} of {cases} generated messages judged right")
    return 1 if bad else 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) == 2 and argv[0] == "--base":
        return check_commits(argv[1])
    if len(argv) == 1 and not argv[0].startswith("-"):
        return check_file(argv[0])
    if not argv:
        return check_commits(None)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
