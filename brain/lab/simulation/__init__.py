"""A simulated PS training job and the job master that drives Brain through its life.

``brain simulate --scenario NAME`` runs one scenario against an in-process Brain (or a
running one with ``--url``) through the reference client ``brain.client``. The
in-process run gets the API app's factory from the ``brain`` program (``api.main``;
``brain`` never imports ``api``).
"""
