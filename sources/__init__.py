"""Sources: one module per kind (a directory, a git repository; packages come with issue
23) and ``choose``, which tells them apart; ``walk`` lists a tree's files, ``identity``
names a source and its cache, ``docs_folder`` picks its documentation."""
