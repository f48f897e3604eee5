import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "searchtweak.settings")
application = get_wsgi_application()

# Without a broker there is no beat: the serving process ticks the schedules itself
# (PERIODIC_IN_WEB_PROCESS). runserver and gunicorn both load this module to serve.
from searchtweak.background import periodic_start  # noqa: E402

periodic_start()
