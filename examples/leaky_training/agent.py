"""A small actor-critic agent whose update returns its losses (the seed 000 shape)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Actor(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden=256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, act_dim), nn.Tanh())

    def forward(self, obs):
        return self.net(obs)


class Critic(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden=256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim + act_dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], dim=-1))


class Agent:
    def __init__(self, obs_dim=32, act_dim=4, lr=1e-3):
        self.actor = Actor(obs_dim, act_dim)
        self.critic = Critic(obs_dim, act_dim)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=lr)

    def update(self, batch, accumulate=False):
        obs, act, target_q = batch
        critic_loss = F.mse_loss(self.critic(obs, act), target_q)
        critic_loss.backward()
        actor_loss = -self.critic(obs, self.actor(obs)).mean()
        actor_loss.backward()
        if not accumulate:
            self.critic_opt.step()
            self.actor_opt.step()
            self.critic_opt.zero_grad()
            self.actor_opt.zero_grad()
        return critic_loss, actor_loss
