"""Vetting prompts carry one audience's proposals; verdicts apply by id (issue 23)."""

from __future__ import annotations

import pytest

from context_engine.memory.vetting import MixedAudiences, Proposal, vet_messages, vet_proposals


class ScriptedClient:
    """A model that answers with ``answer`` and records each prompt it was sent."""

    offline = False
    model = "scripted"

    def __init__(self, answer: dict) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    def complete_json(self, messages, *, schema, timeout=None, max_output_tokens=None):
        self.prompts.append("\n".join(m["content"] for m in messages))
        return self.answer


PUBLIC = Proposal(17, "Maelis Orrow", "npc", ("Maelis Orrow is gone.",), audience="*")
HIDDEN = Proposal(
    11, "Maelis Orrow", "npc", ("Maelis Orrow is not what she seems.",), audience="|DM|"
)


def verdict(id_, term, definition, keep=True, category="npc") -> dict:
    return {"id": id_, "term": term, "keep": keep, "category": category, "definition": definition}


def test_two_audiences_never_share_a_prompt():
    client = ScriptedClient({"terms": []})

    with pytest.raises(MixedAudiences):
        vet_proposals([PUBLIC, HIDDEN], client=client, sleep=lambda _: None)

    assert client.prompts == []  # refused before anything was sent


def test_each_proposal_is_named_by_its_id_in_the_prompt():
    (_, user) = vet_messages([PUBLIC])

    assert user["content"].splitlines()[1] == (
        "- [17] Maelis Orrow (guessed npc): Maelis Orrow is gone."
    )


def test_a_verdict_applies_to_the_id_it_names_and_no_other():
    other = Proposal(18, "KESTREL", "artifact", ("The KESTREL casts off.",), audience="*")
    client = ScriptedClient(
        {
            "terms": [
                verdict(17, "Maelis Orrow", "An archivist who left."),
                verdict(11, "Maelis Orrow", "A traitor."),  # not asked in this prompt
                verdict(18, "Maelis Orrow", "Misnamed."),  # id and term disagree
            ]
        }
    )

    verdicts = vet_proposals([PUBLIC, other], client=client, sleep=lambda _: None)

    assert set(verdicts) == {17}
    assert verdicts[17].definition == "An archivist who left."


def test_a_second_answer_for_the_same_id_does_not_replace_the_first():
    client = ScriptedClient(
        {"terms": [verdict(17, "maelis  orrow", "First."), verdict(17, "Maelis Orrow", "Second.")]}
    )

    verdicts = vet_proposals([PUBLIC], client=client, sleep=lambda _: None)

    assert verdicts[17].definition == "First."
    assert verdicts[17].term == "Maelis Orrow"


@pytest.mark.parametrize(
    "answer",
    [
        {"terms": [{"term": "Maelis Orrow", "keep": True, "category": "npc", "definition": "x"}]},
        {"terms": [verdict("seventeen", "Maelis Orrow", "x")]},
        {"terms": [verdict(True, "Maelis Orrow", "x")]},
        {"terms": {"17": verdict(17, "Maelis Orrow", "x")}},
        ["not", "an", "object"],
    ],
)
def test_answers_without_a_usable_id_apply_to_nothing(answer):
    client = ScriptedClient(answer)

    assert vet_proposals([PUBLIC], client=client, sleep=lambda _: None) == {}
