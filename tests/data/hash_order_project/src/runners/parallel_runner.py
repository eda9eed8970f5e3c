class ParallelRunner:
    def __init__(self, env, mac):
        self.env = env
        self.mac = mac

    def run(self):
        batch = self.env.reset()
        t = 0
        terminated = False
        while not terminated:
            actions = self.mac.select_actions(batch, t)
            batch, terminated = self.env.step(actions)
            t += 1
