// The component's entry: the host's facts handed to the logic (guest.js), exported as the contract's `reconciler`.

import * as facts from 'reconciler:guest/facts@0.6.0';
import { exportGuest } from '@reconciler-host/guest-sdk';
import * as guest from './guest.js';

export const reconciler = exportGuest(guest, facts);
