from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("babel_site.api_router")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("campaigns.console.urls")),
]

handler400 = "babel_site.errors.bad_request"
handler403 = "babel_site.errors.permission_denied"
handler404 = "babel_site.errors.page_not_found"
handler500 = "babel_site.errors.server_error"
