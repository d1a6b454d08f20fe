#!/usr/bin/env bash
# Joins the per-persona parts written for the golden set into eval/golden/{memories,questions}.jsonl.
set -euo pipefail
cd "$(dirname "$0")/../eval/golden"
{
  echo "// memgate golden set: memories (the embedded local backend's JSONL format). Written for this project;"
  echo "// every person, place, number and address is fictional. One memory per line; see README \"memgate eval\"."
  for f in parts/*.memories.jsonl; do grep -v '^\s*//' "$f" | grep -v '^\s*$'; done
} > memories.jsonl
{
  echo "// memgate golden set: questions (id, userId, query, category, lang, expectedIds, answers)."
  for f in parts/*.questions.jsonl; do grep -v '^\s*//' "$f" | grep -v '^\s*$'; done
} > questions.jsonl
wc -l memories.jsonl questions.jsonl
