"""A pack's total budget fitted to the agent's model window: capped so prompt plus answer
fit with a margin, every share scaled together, the reason given — and shrunk to what a
server's "too long" implies."""

from __future__ import annotations

from dataclasses import replace

from context_engine.pack import build_pack
from context_engine.render import pack_to_dict, render_debug
from context_engine.tokens import count
from context_engine.types import DEFAULT_BUDGETS, ModelWindow, PackConfig
from context_engine.window import MIN_BUDGET, TEMPLATE_TOKENS, after_too_long, fit
from tests.context_engine.helpers import Log, config, pack_input, with_retrieval

CAMPAIGN = sum(DEFAULT_BUDGETS.values())  # 13,000


def long_turns(rounds: int = 60):
    """A campaign whose history (long turns) far exceeds any budget here."""
    log = Log()
    for r in range(1, rounds + 1):
        log.add(r, "DM", "narrative", f"Round {r}: the caravan crosses dune {r}. " * 30)
        log.add(r, "Thorin", "action", f"I mark waystone {r} and count the camels. " * 30)
    return with_retrieval(
        pack_input("Thorin", log, input_text="Where is waystone 3?", config=config())
    )


SMALL = ModelWindow(tokens=8192, reserve=1024, source="llama.cpp /props n_ctx", model="m")


def test_a_campaign_budget_over_the_window_is_capped_so_prompt_and_answer_fit():
    config, cap = fit(PackConfig(), SMALL)
    assert cap.capped and cap.campaign_budget == CAMPAIGN
    assert config.total_budget == cap.budget
    # The pack, counted as the server might (25% more), its template and the answer fit.
    assert cap.budget * 1.25 + TEMPLATE_TOKENS + cap.reserve <= SMALL.tokens
    assert cap.budget + cap.reserve + cap.margin <= SMALL.tokens
    assert "8192-token window (llama.cpp /props n_ctx)" in cap.reason
    assert "1024 for the answer" in cap.reason


def test_the_shares_scale_together_and_the_request_keeps_its_room():
    config, _ = fit(PackConfig(), SMALL)
    scaled = dict(config.budgets)
    assert scaled["input"] == DEFAULT_BUDGETS["input"]  # the step instruction is never cut
    others = [name for name in DEFAULT_BUDGETS if name != "input"]
    factors = {round(scaled[n] / DEFAULT_BUDGETS[n], 2) for n in others}
    assert len(factors) == 1 and factors.pop() < 1


def test_a_window_the_campaign_fits_changes_nothing_but_says_so():
    big = ModelWindow(tokens=1_048_576, output_shares=False, source="Gemini", model="g")
    config, cap = fit(PackConfig(), big)
    assert config == PackConfig() and not cap.capped and cap.reserve == 0
    assert cap.reason.startswith(f"the campaign's {CAMPAIGN} tokens fit")


def test_the_answer_has_no_share_of_an_input_only_window():
    shared, _ = fit(PackConfig(), replace(SMALL, output_shares=True))
    alone, _ = fit(PackConfig(), replace(SMALL, output_shares=False))
    assert alone.total_budget > shared.total_budget


def test_a_tiny_window_still_gets_a_floor_budget():
    _, cap = fit(PackConfig(), ModelWindow(tokens=600, reserve=1024))
    assert cap.budget <= MIN_BUDGET + len(DEFAULT_BUDGETS)


def test_a_pack_built_for_a_window_stays_inside_it_and_carries_its_cap():
    base = long_turns()
    plain = build_pack(base)
    fitted = build_pack(replace(base, window=SMALL))
    assert plain.cap is None and plain.total_tokens > fitted.budget
    assert fitted.cap is not None and fitted.budget == fitted.cap.budget
    assert fitted.total_tokens <= fitted.cap.budget
    sent = sum(count(m["content"]) for m in pack_to_dict(fitted)["messages"])
    assert sent * 1.25 + TEMPLATE_TOKENS + SMALL.reserve <= SMALL.tokens
    assert pack_to_dict(fitted)["cap"]["reason"] == fitted.cap.reason
    assert "cap" not in pack_to_dict(plain)  # packs without a window read as before
    assert "Budget: capped at" in render_debug(fitted)


def test_lending_still_works_inside_a_capped_total():
    fitted = build_pack(replace(long_turns(), window=SMALL))
    borrowed = {s.name: s.borrowed for s in fitted.sections if s.borrowed}
    assert borrowed and fitted.total_tokens <= fitted.budget


def test_after_too_long_with_numbers_the_next_pack_fits_the_servers_own_count():
    window = after_too_long(SMALL, sent_tokens=5600, reserve=1024, limit=8192, prompt_tokens=9000)
    _, cap = fit(PackConfig(), window)
    # The server counted 9000 for our 5600: at that ratio the new pack fits its window.
    assert cap.budget * 9000 / 5600 + TEMPLATE_TOKENS + 1024 <= 8192
    assert "window 8192" in window.source


def test_after_too_long_without_numbers_the_budget_halves():
    window = after_too_long(None, sent_tokens=4000, reserve=512)
    _, cap = fit(PackConfig(), window)
    assert cap.budget <= 2000
    assert "no numbers" in window.source
