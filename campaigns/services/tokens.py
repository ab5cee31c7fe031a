"""API tokens (``Authorization: Token …``): issued by `POST /api/auth/token/`, revoked by
`DELETE /api/auth/token/`, by signing out, and by a password change.

A user has at most one token (DRF's `Token`). Between two revocations the token endpoint
hands back the same token (several scripts of one user share it); once revoked, the old
key authenticates nothing and the next sign-in mints a new, different key. Revocation
hooks into Django's own events, so every path counts: the console's and the admin's
sign-out (`user_logged_out`, wired in `CampaignsConfig.ready`), and any password change —
the admin's forms, ``manage.py changepassword``, a password reset, ``set_password`` +
``save`` in a shell — through `RevokeTokenOnPasswordChange`, which Django calls after
every saved password change (``AUTH_PASSWORD_VALIDATORS``' ``password_changed`` hook).
"""

from __future__ import annotations

from rest_framework.authtoken.models import Token


def token_get_or_create(*, user) -> Token:
    """The user's live token, or a new one (a fresh random key) if there is none."""
    token, _ = Token.objects.get_or_create(user=user)
    return token


def token_revoke(*, user) -> bool:
    """Revoke the user's token (if any). True when one was revoked."""
    if user is None or not getattr(user, "pk", None):
        return False
    deleted, _ = Token.objects.filter(user_id=user.pk).delete()
    return bool(deleted)


def revoke_on_logout(sender, request, user, **kwargs) -> None:
    """`user_logged_out` receiver: signing out of the console signs out the API too."""
    token_revoke(user=user)


class RevokeTokenOnPasswordChange:
    """Not a check on the password: Django calls ``password_changed`` on every configured
    validator after a changed password is saved, whichever way it was changed. A token
    issued under the old password stops working there and then (the next sign-in gets a
    new one)."""

    def validate(self, password, user=None) -> None:
        return None

    def password_changed(self, password, user=None) -> None:
        token_revoke(user=user)

    def get_help_text(self) -> str:
        # Listed under the password forms' rules: say what a change does to the API.
        return "Changing your password signs your API token out (sign in again for a new one)."
