"""action/comment.py: one PR comment, created once and then updated, through the REST API."""

from __future__ import annotations

import json
from pathlib import Path

from ._fake_github import BOT
from .conftest import NUMBER, REPOSITORY, outputs, run_script

MARKER = "<!-- ragflow-config -->"
COMMENTS = f"/api/v3/repos/{REPOSITORY}/issues/{NUMBER}/comments"


def _report(tmp_path: Path, text: str) -> Path:
    report = tmp_path / "report.md"
    report.write_text(text, encoding="utf-8")
    return report


def test_the_comment_is_created_once_then_updated_not_duplicated(tmp_path, github_env, fake_github):
    fake, url = fake_github
    env = {**github_env, "GITHUB_API_URL": url}
    fake.add_comment("LGTM, but what does it do to recall?", "a-reviewer")

    first = run_script("comment.py", str(_report(tmp_path, "## plan\nfirst push\n")), env=env)
    assert first.returncode == 0, first.stderr
    assert "created the comment on pull request #17" in first.stdout
    assert fake.calls() == [("GET", COMMENTS), ("POST", COMMENTS)]
    [ours] = fake.ours()
    assert ours["body"] == f"{MARKER}\n## plan\nfirst push\n"
    assert outputs(env)["comment-url"] == ours["html_url"]
    listing = fake.requests[0]
    assert listing.query == {"per_page": ["100"]}

    fake.requests.clear()
    second = run_script("comment.py", str(_report(tmp_path, "## plan\nsecond push\n")), env=env)
    assert second.returncode == 0, second.stderr
    assert "updated the comment" in second.stdout
    assert fake.calls() == [
        ("GET", COMMENTS),
        ("PATCH", f"/api/v3/repos/{REPOSITORY}/issues/comments/{ours['id']}"),
    ]
    assert fake.requests[1].body == {"body": f"{MARKER}\n## plan\nsecond push\n"}
    assert [c["body"] for c in fake.ours()] == [f"{MARKER}\n## plan\nsecond push\n"]
    # The reviewer's comment is as it was.
    assert fake.comments[0]["body"] == "LGTM, but what does it do to recall?"
    assert len(fake.comments) == 2


def test_other_users_comments_holding_the_marker_are_left_alone(tmp_path, github_env, fake_github):
    fake, url = fake_github
    env = {**github_env, "GITHUB_API_URL": url}
    # A user quoting the bot's comment, and one pasting it whole: neither is the bot's.
    fake.add_comment(f"> {MARKER}\n> ## ragflow-config\nwhy 12,000 chunks?", "a-reviewer")
    fake.add_comment(f"{MARKER}\ncopied by hand", "someone-else")
    # Another bot's marker (another tag) is not ours either.
    fake.add_comment("<!-- ragflow-config:staging -->\nstaging report", BOT)

    done = run_script("comment.py", str(_report(tmp_path, "report\n")), env=env)
    assert done.returncode == 0, done.stderr
    assert [method for method, _ in fake.calls()] == ["GET", "POST"]
    assert [c["body"] for c in fake.comments[:3]] == [
        f"> {MARKER}\n> ## ragflow-config\nwhy 12,000 chunks?",
        f"{MARKER}\ncopied by hand",
        "<!-- ragflow-config:staging -->\nstaging report",
    ]
    assert fake.comments[3]["body"] == f"{MARKER}\nreport\n"

    # With its tag, the staging job updates its own comment only.
    fake.requests.clear()
    tagged = run_script("comment.py", "--tag", "staging", str(_report(tmp_path, "v2\n")), env=env)
    assert tagged.returncode == 0, tagged.stderr
    assert fake.calls()[-1] == (
        "PATCH",
        f"/api/v3/repos/{REPOSITORY}/issues/comments/{fake.comments[2]['id']}",
    )
    assert fake.comments[2]["body"] == "<!-- ragflow-config:staging -->\nv2\n"
    assert fake.comments[3]["body"] == f"{MARKER}\nreport\n"


def test_a_comment_on_the_second_page_of_the_listing_is_found(tmp_path, github_env, fake_github):
    fake, url = fake_github
    env = {**github_env, "GITHUB_API_URL": url}
    for n in range(130):
        fake.add_comment(f"discussion {n}", "a-reviewer")
    ours = fake.add_comment(f"{MARKER}\nold report", BOT)  # the 131st: page 2 of 100
    fake.add_comment("after it", "a-reviewer")

    done = run_script("comment.py", str(_report(tmp_path, "new report\n")), env=env)
    assert done.returncode == 0, done.stderr
    assert fake.calls() == [
        ("GET", COMMENTS),
        ("GET", COMMENTS),
        ("PATCH", f"/api/v3/repos/{REPOSITORY}/issues/comments/{ours['id']}"),
    ]
    assert [r.query.get("page") for r in fake.requests[:2]] == [None, ["2"]]
    assert ours["body"] == f"{MARKER}\nnew report\n"
    assert len(fake.comments) == 132


def test_an_api_error_is_reported_with_githubs_message_and_fails(tmp_path, github_env, fake_github):
    fake, url = fake_github
    env = {**github_env, "GITHUB_API_URL": url}
    fake.fail_with = (403, {"message": "Resource not accessible by integration"})

    done = run_script("comment.py", str(_report(tmp_path, "report\n")), env=env)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: the pull request comment was not written: ")
    assert (
        f"GET /repos/{REPOSITORY}/issues/{NUMBER}/comments?per_page=100: 403 Forbidden"
        in done.stderr
    )
    assert "Resource not accessible by integration" in done.stderr
    assert "pull-requests: write" in done.stderr
    assert fake.comments == []


def test_a_refused_update_fails_too(tmp_path, github_env, fake_github):
    fake, url = fake_github
    env = {**github_env, "GITHUB_API_URL": url}
    fake.add_comment(f"{MARKER}\nold", BOT)
    done = run_script("comment.py", str(_report(tmp_path, "report\n")), env=env)
    assert done.returncode == 0
    fake.fail_with = (422, {"message": "Validation Failed"})
    again = run_script("comment.py", str(_report(tmp_path, "report\n")), env=env)
    assert again.returncode == 1
    assert "GET" in again.stderr and "422 Unprocessable Entity: Validation Failed" in again.stderr


def test_an_unreachable_api_is_reported_and_fails(tmp_path, github_env):
    env = {**github_env, "GITHUB_API_URL": "http://127.0.0.1:9"}  # discard port: nothing listens
    done = run_script("comment.py", str(_report(tmp_path, "report\n")), env=env)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "cannot reach http://127.0.0.1:9" in done.stderr


def test_a_wrong_token_is_refused_by_the_api_and_the_job_fails(tmp_path, github_env, fake_github):
    fake, url = fake_github
    env = {**github_env, "GITHUB_API_URL": url, "GITHUB_TOKEN": "not-the-token"}
    done = run_script("comment.py", str(_report(tmp_path, "report\n")), env=env)
    assert done.returncode == 1
    assert "401 Unauthorized" in done.stderr
    # The fake recorded the bad header: that is what this test wants, not a fault.
    assert [p.split(": ", 1)[1] for p in fake.problems] == ["Authorization: 'Bearer not-the-token'"]
    fake.problems.clear()


def test_no_token_is_a_clear_error_before_any_request(tmp_path, github_env, fake_github):
    fake, url = fake_github
    env = {**github_env, "GITHUB_API_URL": url, "GITHUB_TOKEN": ""}
    done = run_script("comment.py", str(_report(tmp_path, "report\n")), env=env)
    assert done.returncode == 1
    assert "no token" in done.stderr
    assert fake.requests == []


def test_outside_a_pull_request_nothing_is_written(tmp_path, github_env, fake_github):
    fake, url = fake_github
    push = tmp_path / "push.json"
    push.write_text(json.dumps({"ref": "refs/heads/main", "commits": []}))
    env = {**github_env, "GITHUB_API_URL": url, "GITHUB_EVENT_PATH": str(push)}
    env["GITHUB_EVENT_NAME"] = "push"
    done = run_script("comment.py", str(_report(tmp_path, "report\n")), env=env)
    assert done.returncode == 0, done.stderr
    assert "not a pull request" in done.stdout
    assert fake.requests == []


def test_a_report_longer_than_a_comment_is_cut_at_a_line(tmp_path, github_env, fake_github):
    fake, url = fake_github
    env = {**github_env, "GITHUB_API_URL": url}
    text = "".join(f"| doc-{n:05} | add |\n" for n in range(5000))  # ~95,000 characters
    done = run_script("comment.py", str(_report(tmp_path, text)), env=env)
    assert done.returncode == 0, done.stderr
    body = fake.ours()[0]["body"]
    assert len(body) <= 65536
    assert body.startswith(MARKER + "\n| doc-00000 | add |\n")
    kept, note = body.rsplit("\n\n", 1)
    assert kept.endswith(" | add |")
    assert "job summary has all of it" in note
