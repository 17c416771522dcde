"""The named statements of the store, one module per concern (fragments: the pieces
several share). Only ethos.db.store imports them."""
