import torch as th
import torch.nn as nn


class RNNAgent(nn.Module):
    def __init__(self, n_in, n_hidden, n_actions):
        super().__init__()
        self.fc = nn.Linear(n_in, n_hidden)
        self.rnn = nn.GRUCell(n_hidden, n_hidden)
        self.out = nn.Linear(n_hidden, n_actions)

    def forward(self, x, h):
        h = self.rnn(th.relu(self.fc(x)), h)
        return self.out(h), h


class BasicMAC:
    def __init__(self, n_in, n_actions):
        self.agent = RNNAgent(n_in, 64, n_actions)
        self.hidden_states = None

    def select_actions(self, batch, t):
        return self.forward(batch, t).argmax(-1)

    def forward(self, batch, t):
        agent_outs, self.hidden_states = self.agent(batch[:, t], self.hidden_states)
        return agent_outs
