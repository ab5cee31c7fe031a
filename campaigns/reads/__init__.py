"""The read side: everything that reads rows for a reader, and nothing that writes.

`selectors` decides visibility (in one place: the live channels a text reaches too);
`numbering` gives the numbers a viewer is shown (positions in their own readable
stream), counted over the selectors' reads; `packs` is the pack loader's precompiled,
visibility-filtered SQL built from the selectors' rules; `precompiled` compiles and
batches those statements; `lookups` registers the `readable_by` lookup the selectors
filter with; `adapters` turns rows into the engine's frozen dataclasses; `usage` reads
model-call usage. Services and views import from here; nothing here imports a service.
"""
