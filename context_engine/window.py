"""Fit a pack's total budget to the agent's model window (`fit`), and shrink it after a
server said "too long" (`after_too_long`).

The campaign's section budgets are shares of a total (about 13,000 tokens by default).
A model with an 8,192-token window cannot read that: the total is capped so the prompt
plus the answer fits, and every section's share scales by the same factor (lending then
works inside the smaller total as before):

    room   = window − reserve            (reserve: the answer's max output, when the
                                          answer shares the window — local servers;
                                          Gemini's input limit is the prompt's alone)
    budget = (room − TEMPLATE_TOKENS) / ratio

The margin (``room − budget``) is there because the pack counts tokens with cl100k_base
and the server counts with its model's own tokenizer, which is usually smaller: with a
32k–50k vocabulary (Llama 2, Mistral, SmolLM2) the same English prose takes about 10–25%
more tokens than with cl100k's 100k; ``ratio`` = 1.25 covers that, and
``TEMPLATE_TOKENS`` covers the chat template the server wraps the three messages in
(role markers, BOS/EOS: a few tokens each). A server that still answers "too long" tells
us its real ratio (`after_too_long`), and the next pack uses it.
"""

from __future__ import annotations

from dataclasses import replace

from context_engine.types import BudgetCap, ModelWindow, PackConfig

TOKENIZER_RATIO = 1.25  # server tokens per cl100k token we allow for (see above)
TEMPLATE_TOKENS = 64  # chat-template tokens around the messages
MIN_BUDGET = 128  # below this a pack holds nothing useful; the server will say so
KEPT = ("input",)  # sections whose share does not shrink with the window (see `scale`)
RETRY_HEADROOM = 1.1  # after a "too long", aim this far under the server's own count


def fit(config: PackConfig, window: ModelWindow) -> tuple[PackConfig, BudgetCap]:
    """``config`` with its total capped to fit ``window`` (sections scaled together), and
    the cap with its reason. Unchanged when the campaign's total already fits."""
    campaign = config.total_budget
    reserve = window.reserve if window.output_shares else 0
    room = max(window.tokens - reserve, 0)
    fits = max(int((room - TEMPLATE_TOKENS) / max(window.ratio, 1.0)), MIN_BUDGET)
    capped = campaign > fits
    scaled = scale(config, fits) if capped else config
    cap = BudgetCap(
        campaign_budget=campaign,
        budget=scaled.total_budget,
        window=window.tokens,
        reserve=reserve,
        margin=max(room - fits, 0),
        capped=capped,
        source=window.source,
        model=window.model,
    )
    return scaled, cap


def scale(config: PackConfig, total: int) -> PackConfig:
    """Every section's share (and explicit tier budgets) scaled by one factor, rounded
    down, summing to at most ``total`` — except the ``input`` section's (`KEPT`), which
    holds the request itself (the relay's step instruction: ~200–250 tokens): cut, the
    model would not know what to answer or in which format. It keeps its own share
    while that is at most half the total."""
    current = config.total_budget
    if current <= 0:
        return config
    kept = {name: b for name, b in config.budgets if name in KEPT and b <= total // 2}
    rest_now = current - sum(kept.values())
    rest = total - sum(kept.values())
    if rest_now <= 0:
        return config
    budgets = tuple(
        (name, kept[name] if name in kept else budget * rest // rest_now)
        for name, budget in config.budgets
    )
    tiers = tuple((name, budget * total // current) for name, budget in config.tier_budgets)
    return replace(config, budgets=budgets, tier_budgets=tiers)


def after_too_long(
    window: ModelWindow | None,
    *,
    sent_tokens: int,
    reserve: int,
    limit: int | None = None,
    prompt_tokens: int | None = None,
) -> ModelWindow:
    """The window (with its tokenizer ratio) to retry with after the server refused a prompt
    of ``sent_tokens`` (our count) as too long.

    When the server gave its numbers, the window is its ``limit`` and the ratio what it
    counted per token we counted (times `RETRY_HEADROOM`); when it did not, the next
    pack gets half the budget this one had.
    """
    if limit and prompt_tokens and sent_tokens > 0:
        ratio = max(TOKENIZER_RATIO, prompt_tokens / sent_tokens) * RETRY_HEADROOM
        learned = ModelWindow(
            tokens=limit,
            output_shares=window.output_shares if window else True,
            reserve=reserve,
            source=f"the server's error: window {limit}, it counted {prompt_tokens} tokens",
            model=window.model if window else "",
            ratio=ratio,
        )
        return learned
    half = max(sent_tokens // 2, MIN_BUDGET)
    tokens = int(half * TOKENIZER_RATIO) + TEMPLATE_TOKENS + reserve
    if window is not None:
        tokens = min(tokens, window.tokens)
    return ModelWindow(
        tokens=tokens,
        output_shares=True,
        reserve=reserve,
        source=f"the server's error (no numbers): half of the {sent_tokens} tokens sent",
        model=window.model if window else "",
    )
