"""The flag grammar of preflight-adapter.md §7.2 that click does not apply by itself.

In the space form (``--out x``) a next token longer than one character that starts with ``-`` is a
missing value, not the value: ``score … --out --strict`` must not write the artifact into a directory
named ``--strict``. A value that really starts with ``-`` is given in the ``=`` form (``--out=-x.json``);
a lone ``-`` (stdin) is a value. ``--`` at the end is ignored; a token after it is refused, as these
commands take no positional argument.
"""

from __future__ import annotations

import click


def flag_missing_its_value(args: list[str], value_flags: set[str]) -> tuple[str, str] | None:
    """The first (flag, next token) where a value flag in the space form is followed by a flag-like token."""
    for flag, following in zip(args, args[1:], strict=False):
        if flag == "--":
            break
        if flag in value_flags and len(following) > 1 and following.startswith("-"):
            return flag, following
    return None


class FlagGrammarCommand(click.Command):
    """A click command that refuses a flag-like token in a value position (exit 64) before parsing."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Apply §7.2's missing-value rule, then let click parse."""
        value_flags = {
            name
            for param in self.params
            if isinstance(param, click.Option) and not param.is_flag
            for name in param.opts
        }
        found = flag_missing_its_value(args, value_flags)
        if found is not None:
            flag, following = found
            raise click.UsageError(
                f'{flag} needs a value, but the next token is "{following}"; '
                f"to give a value that starts with \"-\", write {flag}=<value>",
                ctx=ctx,
            )
        if "--" in args[:-1]:  # a trailing "--" is ignored; anything after it would be a positional
            extra = args[args.index("--") + 1]
            raise click.UsageError(f'{self.name} takes no positional argument, but got "{extra}"', ctx=ctx)
        typed = list(args)  # click's parser consumes the list it is given
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:  # §7.2's wording, naming the token as typed
            flag = exc.option_name
            token = next((a for a in typed if a.startswith(f"{flag}=")), None)
            where = f'in "{token}"' if token is not None else f"for {self.name}"
            raise click.UsageError(f'unknown flag "{flag}" {where}', ctx=ctx) from None

