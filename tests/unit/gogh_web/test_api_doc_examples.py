"""docs/api.md's examples are what the server answers, word for word: each `$ curl` example is
sent to the API and its answer compared with the one printed under it, and every message quoted
in the prose must be one of those answers (NAME, N and ... standing for any text). A changed
message fails here until the doc says the new one."""
import json
import re
import shlex
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.utils import timezone

from catalog.models import Workload
from gogh_web.api import overload
from telemetry.models import Gpu, Node

DOC = Path(settings.BASE_DIR) / "docs" / "api.md"
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def curl_examples(text: str) -> list[tuple[str, str]]:
    """(command, answer) of each fenced block that starts with `$ curl`."""
    examples = []
    for block in FENCE.findall(text):
        if not block.startswith("$ curl"):
            continue
        lines = block.splitlines()
        command = lines.pop(0)[2:]
        while command.endswith("\\"):
            command = command[:-1] + " " + lines.pop(0).strip()
        examples.append((command, " ".join(line.strip() for line in lines)))
    return examples


def quoted_messages(text: str) -> list[str]:
    """The sentences (a space, a final full stop) quoted in inline code outside the examples."""
    prose = FENCE.sub("", text)
    return [
        " ".join(string.split())
        for span in re.findall(r"`([^`]+)`", prose)
        for string in re.findall(r'"((?:[^"\\]|\\.)*)"', span)
        if " " in string and string.endswith(".")
    ]


def send(client_for, users, command: str):
    """The Django test client's request for a curl command line: -X, -H Authorization, -d, URL."""
    words = shlex.split(command)[1:]
    method, body, token, url = "GET", None, None, None
    while words:
        word = words.pop(0)
        if word == "-X":
            method = words.pop(0)
        elif word == "-H":
            header = words.pop(0)
            if header.startswith("Authorization: Token $"):
                token = header.removeprefix("Authorization: Token $")
        elif word == "-d":
            body = words.pop(0)
        elif not word.startswith("-"):
            url = urlsplit("http://" + word)
    client = client_for(users[token])
    path = url.path + (f"?{url.query}" if url.query else "")
    if body is None:
        return client.generic(method, path)
    return client.generic(method, path, body.encode(), content_type="application/json")


def strings(value) -> list[str]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return [value] if isinstance(value, str) else []


def template(message: str) -> re.Pattern:
    """The doc's placeholders: NAME (a name), N (a number), ... (any text)."""
    parts = re.split(r"(\.\.\.|\bNAME\b|\bN\b)", message)
    wild = {"...": ".+", "NAME": "[^' ]+", "N": r"\d+"}
    return re.compile("".join(wild.get(part, re.escape(part)) for part in parts))


@pytest.fixture
def users(alice, agent, v100, k80):
    """The people of the examples: $TOKEN a member of a tenant, $AGENT_TOKEN an agent with an
    approved K80 node that runs nothing; a V100 node; the workload A3C."""
    Workload.objects.create(name="A3C", family="A3C")
    for gpu_type, agent_user in ((v100, None), (k80, agent)):
        node = Node.objects.create(hostname=f"{gpu_type.name}-a", approved_at=timezone.now(), agent=agent_user)
        Gpu.objects.create(node=node, index=0, uuid=f"GPU-{gpu_type.name}-0", gpu_type=gpu_type)
    return {"TOKEN": alice, "AGENT_TOKEN": agent}


@pytest.fixture
def busy_answer(client_for, alice):
    """What a web process at its bound answers (the 503 of docs/api.md's Errors)."""
    gate, taken = overload.gate("web", settings.GOGH_WEB_CONCURRENCY), 0
    while gate.try_enter():
        taken += 1
    try:
        response = client_for(alice).get("/api/jobs/")
    finally:
        for _ in range(taken):
            gate.leave()
    assert response.status_code == 503
    return response.json()


EXAMPLES = curl_examples(DOC.read_text())


def test_the_doc_has_its_error_examples():
    assert len(EXAMPLES) >= 5
    assert any("min_throughput" in answer for _, answer in EXAMPLES)


@pytest.mark.parametrize(("command", "answer"), EXAMPLES, ids=[answer[:40] for _, answer in EXAMPLES])
def test_each_curl_example_gets_the_answer_printed_under_it(client_for, users, command, answer):
    response = send(client_for, users, command)
    assert response.status_code < 500, response.content
    assert response.json() == json.loads(answer), "docs/api.md: " + response.content.decode()


def test_every_message_quoted_in_the_doc_is_one_the_server_gives(client_for, users, busy_answer):
    text = DOC.read_text()
    answers = [send(client_for, users, command).json() for command, _ in curl_examples(text)] + [busy_answer]
    given = [message for answer in answers for message in strings(answer)]
    quoted = quoted_messages(text)
    assert quoted, "no message found in docs/api.md's prose: has the quoting changed?"
    for message in quoted:
        assert any(template(message).fullmatch(g) for g in given), f"docs/api.md quotes {message!r}; given: {given}"
