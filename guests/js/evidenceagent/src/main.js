// The EvidenceAgent's component entry: the host's facts handed to the logic (agent.js), exported as the contract's `reconciler`.

import * as facts from 'reconciler:guest/facts@0.6.0';
import { exportGuest } from '../../sdk/index.js';
import * as agent from './agent.js';

export const reconciler = exportGuest(agent, facts);
