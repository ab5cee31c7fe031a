import json
import time
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from campaigns.models import Experiment
from campaigns.services.arena import ArenaParams, arena_report
from campaigns.services.arena.plot import arena_plot
from context_engine.arena import DEFAULT_BUDGETS, DEFAULT_EVERY, check_bar, format_table
from context_engine.types import STRATEGIES


class Command(BaseCommand):
    help = (
        "Replay an experiment under every strategy × budget and score each role's pack on "
        "the planted facts (retention, hinges, tokens, leaks) and, when the campaign has "
        "questions, on evidence recall against the recency and bm25 floors; print the table "
        "and the recommended configuration."
    )

    def add_arguments(self, parser):
        parser.add_argument("experiment_id", type=int)
        parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=None)
        parser.add_argument("--budgets", nargs="+", type=int, default=None)
        parser.add_argument("--every", type=int, default=DEFAULT_EVERY)
        parser.add_argument("--roles", nargs="+", default=None)
        parser.add_argument("--judge", default="offline", help="offline or a model id.")
        parser.add_argument("--json", dest="json_path", help="Write the report here.")
        parser.add_argument("--plot", dest="plot_path", help="Write a PNG plot here.")

    def handle(self, *args, experiment_id, **options):
        experiment = Experiment.objects.filter(pk=experiment_id).first()
        if experiment is None:
            raise CommandError(f"No experiment {experiment_id}.")
        try:
            params = ArenaParams.clean(
                experiment=experiment,
                strategies=options["strategies"],
                budgets=options["budgets"] or DEFAULT_BUDGETS,
                every=options["every"],
                roles=options["roles"],
                judge=options["judge"],
            )
        except ValidationError as exc:
            details = "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
            raise CommandError(details) from None
        started = time.perf_counter()
        report, details = arena_report(experiment=experiment, params=params)
        elapsed = time.perf_counter() - started
        self.stdout.write(format_table(report, details))
        self.stdout.write(
            f"facts: {details['facts']} ({details['facts_source']}), "
            f"{details['hinge_facts']} hinge facts; roles: {', '.join(details['roles'])}; "
            f"{details['packs']} packs in {elapsed:.1f} s"
        )
        bar = check_bar(report, details)
        if bar is not None:
            self.stdout.write(
                f"bar ({bar['strategy']} @ {bar['budget']}): retention {bar['retention']:.1%}, "
                f"worst role {bar['worst_role_retention']:.1%} (≥ 95%), worst role hinges "
                f"{bar['worst_role_hinge_retention']:.1%} (100%), leaks {bar['leaks']} (0), "
                f"tokens {bar['token_share']:.1%} of full history, within the budget: "
                + ("PASS" if bar["passed"] else "FAIL")
            )
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(report, indent=2) + "\n")
            self.stdout.write(f"Wrote {options['json_path']}")
        if options["plot_path"]:
            arena_plot(report, details, options["plot_path"])
            self.stdout.write(f"Wrote {options['plot_path']}")
