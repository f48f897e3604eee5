FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

COPY pyproject.toml README.md ./
COPY searchtweak ./searchtweak
COPY evaluations ./evaluations
COPY judgments ./judgments
COPY metrics ./metrics
RUN pip install .

COPY . .
# collectstatic needs settings that start; the real secret arrives at run time.
RUN DEBUG=false SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput

RUN useradd --create-home searchtweak
USER searchtweak
EXPOSE 8000
CMD ["gunicorn", "searchtweak.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--worker-class", "gthread", "--threads", "4", "--access-logfile", "-"]
