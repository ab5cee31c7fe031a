"""The REST API's URL table (SPEC §8). Views live in `campaigns.api`."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from campaigns.api import views

urlpatterns = [
    path("auth/token/", views.ObtainTokenView.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
