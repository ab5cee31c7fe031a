"""Server-rendered pages. Thin views: selectors decide what each user may see."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from campaigns import selectors


@login_required
def home(request):
    experiments = selectors.experiments_for_user(request.user).order_by("-created_at")
    return render(request, "campaigns/home.html", {"experiments": experiments})
