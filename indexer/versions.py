"""What a cache's build configuration is made of: the versions of the indexer's parts.

Bump a version when its part changes what it produces for the same input (terms, token
estimates, chunk sizes): the store then sees a different build configuration and rebuilds
caches made by the old code in full. They live here, apart from the code they describe,
so that the store can read them without importing the analyzer (an incremental build's
main process never analyzes text: its parse worker does).
"""

ANALYZER_VERSION = 3  # indexer.analysis: words, identifier parts, stopwords, stemming, features
TOKENIZER_VERSION = 1  # indexer.tokens: the token estimate stored per section
PART_TOKENS = 1000  # indexer.chunks: the size of -part-<n> chunks of headingless files
# indexer.document: sections kept per file; the headings after the last one kept are merged
# into it. The largest real file seen (fastapi's release-notes.md) has 916.
MAX_SECTIONS_PER_FILE = 5000
