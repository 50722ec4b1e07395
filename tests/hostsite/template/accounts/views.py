"""The site's own login: authenticate() then login(), as most sites do."""

from django.contrib.auth import authenticate, login
from django.http import HttpResponse


def sign_in(request):
    user = authenticate(
        request,
        username=request.POST.get("email"),
        password=request.POST.get("password"),
    )
    if user is None:
        return HttpResponse("refused", status=401)
    login(request, user)
    return HttpResponse("signed in")


def whoami(request):
    if not request.user.is_authenticated:
        return HttpResponse("anonymous", status=403)
    return HttpResponse(request.user.get_username())
