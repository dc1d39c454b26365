// Whether this machine has the SVOX Pico voices (Debian libttspico-data, installed by .ci/run, and the npm engine), and
// why not: the suites that need them skip with that reason in their title.
import { PICO_LANG_DIR, findPico } from '../../engine/models/pico/catalog.js';
import { resolvePicoEngine } from '../../engine/models/pico/binding.js';

export const PICO_PRESENCE = findPico(PICO_LANG_DIR, () => void resolvePicoEngine());
export const PICO_INSTALLED = PICO_PRESENCE.voices.length > 0;
export const PICO_VOICE_IDS = PICO_PRESENCE.voices.map((v) => v.id);
/** Appended to a describe title: empty when installed, else the reason the suite is skipped. */
export const PICO_SKIP_NOTE = PICO_INSTALLED ? '' : ` (skipped: ${PICO_PRESENCE.missing}; bash .ci/run installs libttspico-data)`;
