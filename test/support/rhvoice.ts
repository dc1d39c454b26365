// Whether this machine has the RHVoice voices (Debian rhvoice-english + librhvoice5, installed by .ci/run), and why
// not: the suites that need them skip with that reason in their title.
import { RHVOICE_DATA_DIR, findRhvoice } from '../../engine/models/rhvoice/catalog.js';
import { loadRhvoiceLibrary } from '../../engine/models/rhvoice/binding.js';

export const RHVOICE_PRESENCE = findRhvoice(RHVOICE_DATA_DIR, () => void loadRhvoiceLibrary());
export const RHVOICE_INSTALLED = RHVOICE_PRESENCE.voices.length > 0;
/** Appended to a describe title: empty when installed, else the reason the suite is skipped. */
export const RHVOICE_SKIP_NOTE = RHVOICE_INSTALLED ? '' : ` (skipped: ${RHVOICE_PRESENCE.missing}; bash .ci/run installs it)`;
