from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico whatever the page links: no 404 in every console.
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("favicon.svg"), permanent=True)),
    path("api/", include("babel_site.api_router")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("campaigns.console.urls")),
]

handler400 = "babel_site.errors.bad_request"
handler403 = "babel_site.errors.permission_denied"
handler404 = "babel_site.errors.page_not_found"
handler500 = "babel_site.errors.server_error"
