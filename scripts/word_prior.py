"""Writes ethos/db/schema/word_prior.tsv: how common each word is in English, the prior
automatic importance weighs a new agent's words with (decision 0023).

    pip install wordfreq==3.1.1 && python scripts/word_prior.py

Source: wordfreq 3.1.1 (Robyn Speer; its English "large" list, a blend of subtitles
(OpenSubtitles 2018, SUBTLEX), Twitter, Reddit, Wikipedia, news, books and the web). Its
data is CC BY-SA 4.0, and so is this derived list: the file's header says so. Run once,
offline, by hand; ethos itself never imports wordfreq.

Words are split as PostgreSQL's 'simple' text search configuration splits them (an
apostrophe or any other non-letter ends a word: "can't" is "can" and "t"), their
frequencies summed, and only those at least as common as MIN_ZIPF kept: a rarer word
counts as much as a word never seen, so it need not be shipped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

from wordfreq import get_frequency_dict

MIN_ZIPF = 4.0  # the list's floor; ethos_prior_words() divides by 9 - this
OUT = Path(__file__).resolve().parent.parent / "ethos" / "db" / "schema" / "word_prior.tsv"
HEADER = """\
# word<TAB>zipf: how common a word is in English, log10 of its count per billion words.
# Derived from wordfreq 3.1.1 (Robyn Speer, https://github.com/rspeer/wordfreq), English
# "large" list, by scripts/word_prior.py; words at zipf >= {floor} as PostgreSQL's
# 'simple' configuration splits them. Licence: CC BY-SA 4.0, as wordfreq's data
# (https://creativecommons.org/licenses/by-sa/4.0/).
"""


def main() -> None:
    counts: Counter[str] = Counter()
    for word, frequency in get_frequency_dict("en", "large").items():
        for part in re.findall(r"[^\W_]+", word):  # the letters and digits between others
            counts[part] += frequency
    kept = {
        w: math.log10(f * 1e9)
        for w, f in counts.items()
        if math.log10(f * 1e9) >= MIN_ZIPF and not w.isdigit()  # a number always counts 1
    }
    lines = [f"{w}\t{z:.2f}" for w, z in sorted(kept.items(), key=lambda x: (-x[1], x[0]))]
    OUT.write_text(HEADER.format(floor=MIN_ZIPF) + "\n".join(lines) + "\n")
    print(f"{len(lines)} words written to {OUT}")


if __name__ == "__main__":
    main()
