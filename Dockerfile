FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

COPY pyproject.toml README.md ./
COPY searchtweak ./searchtweak
COPY evaluations ./evaluations
COPY judgments ./judgments
COPY judges ./judges
COPY metrics ./metrics
COPY guide ./guide
RUN pip install .

COPY . .
# collectstatic needs settings that start; the real secret arrives at run time.
RUN DEBUG=false SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput

RUN useradd --create-home searchtweak \
    # Where every process writes its counts for /metrics (PROMETHEUS_MULTIPROC_DIR in
    # docker-compose.yml): a volume mounted here starts owned by the app's user.
    && mkdir -p /var/lib/searchtweak-metrics \
    && chown searchtweak /var/lib/searchtweak-metrics
USER searchtweak
EXPOSE 8000
# gunicorn.conf.py: sync workers, two per CPU (WEB_CONCURRENCY); see its docstring.
CMD ["gunicorn", "searchtweak.wsgi:application", "--config", "gunicorn.conf.py"]
