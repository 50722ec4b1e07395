from accounts import views
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", views.sign_in),
    path("accounts/me/", views.whoami),
    path("api/mcp/", include("mcp_gateway.urls")),
    path("api/gateway/", include("mcp_gateway.api.urls")),
    path("", include("mcp_gateway.urls.well_known")),
]
