# Two commands a newcomer needs (see README):
#   make run    install everything, index the bundled corpus, show a search, start the API
#   make test   install everything, run the test suite (what CI runs)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PIP    := $(BIN)/pip --disable-pip-version-check -q

export HF_HUB_OFFLINE := 1
export KB_DATA_DIR ?= $(CURDIR)/.kb-data
PORT ?= 8000

.PHONY: install browser run index demo serve test bench clean

# torch is pinned to the CPU wheel on this machine's disk before anything else can ask
# for a bare `torch` (which would pull a multi-GB CUDA build).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install torch==2.13.0
	$(PIP) install -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

index: install
	$(BIN)/kb ingest corpus/

demo: index
	printf 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB\nIt happens while saving the checkpoint with zero3 offload.\n' | $(BIN)/kb search

serve: install
	$(BIN)/kb serve --host 127.0.0.1 --port $(PORT)

run: demo serve

# The web page is tested in Debian's Chromium (never a downloaded browser).
browser:
	@test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

test: install browser
	$(BIN)/python -m pytest

bench: index
	$(BIN)/python scripts/bench_ingest.py
	$(BIN)/python scripts/bench_search.py
	$(BIN)/python scripts/bench_signature.py
	$(BIN)/python scripts/bench_glossary.py

clean:
	rm -rf $(VENV) .kb-data
