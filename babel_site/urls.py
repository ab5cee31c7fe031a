from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("babel_site.api_router")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("campaigns.console.urls")),
]
